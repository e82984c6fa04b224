// TRUST_PROXY=true is documented for "behind a reverse proxy / the balancer". src/app.ts hands it to
// Fastify as `trustProxy: true`, which trusts EVERY hop of X-Forwarded-For, so request.ip is the
// left-most value: whatever the client wrote. Proxies (nginx $proxy_add_x_forwarded_for, ALB,
// Traefik, Caddy) append the real peer to what the client sent, so a client picks its own IP per
// request: the per-IP sign-in budget (and the global one, audit and consent IPs) mean nothing.
import t from 'tap'
import { buildTestApp, uniqueEmail, WEB_ORIGIN } from '../helpers/app.js'

const PROXY = '10.0.0.2' // the balancer: the TCP peer of every request
const CLIENT = '203.0.113.7' // the attacker, as the balancer saw it and appended

t.test('behind a trusted proxy, a client cannot choose its own IP by prefixing X-Forwarded-For', async (t) => {
  const app = await buildTestApp({ env: { TRUST_PROXY: 'true', RATE_LIMIT_SIGN_IN_IP_PER_MINUTE: '3' } })
  const statuses: number[] = []
  for (let i = 0; i < 8; i++) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/auth/sign-in/email',
      remoteAddress: PROXY,
      // What the balancer forwards: the client's own header, then the address it really came from.
      headers: { origin: WEB_ORIGIN, 'x-forwarded-for': `198.51.100.${i + 1}, ${CLIENT}` },
      payload: { email: uniqueEmail(), password: 'correct horse battery staple' },
    })
    statuses.push(res.statusCode)
  }
  // The same client (203.0.113.7) made 8 sign-in attempts: past the budget of 3 they must be 429.
  t.same(statuses.slice(3), [429, 429, 429, 429, 429], `statuses: ${statuses.join(',')}`)
})
