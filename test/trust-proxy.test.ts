// TRUST_PROXY names the proxies whose X-Forwarded-For is believed. Proxies (nginx's
// $proxy_add_x_forwarded_for, AWS ALB, Traefik, Caddy) append the peer they saw to whatever the client
// sent, so only the entries those proxies added may be believed: the client's own prefix must never
// become its IP, or it picks a fresh per-IP budget for every request.
import t from 'tap'
import { buildTestApp, call, sessionCookieOf, uniqueEmail, WEB_ORIGIN } from './helpers/app.js'

const PROXY = '10.0.0.2' // the balancer: the TCP peer of every request
const CLIENT = '203.0.113.7' // the attacker, as the balancer saw it and appended

async function signInStatuses(env: Record<string, string>, remoteAddress: string): Promise<number[]> {
  const app = await buildTestApp({ env: { ...env, RATE_LIMIT_SIGN_IN_IP_PER_MINUTE: '3' } })
  const statuses: number[] = []
  for (let i = 0; i < 8; i++) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/auth/sign-in/email',
      remoteAddress,
      // What the balancer forwards: the client's own header, then the address it really came from.
      headers: { origin: WEB_ORIGIN, 'x-forwarded-for': `198.51.100.${i + 1}, ${CLIENT}` },
      payload: { email: uniqueEmail(), password: 'correct horse battery staple' },
    })
    statuses.push(res.statusCode)
  }
  return statuses
}

t.test('behind a listed proxy, a client cannot choose its own IP by prefixing X-Forwarded-For', async (t) => {
  for (const trusted of ['10.0.0.2', '10.0.0.0/8', 'uniquelocal', '192.0.2.1, 10.0.0.2']) {
    const statuses = await signInStatuses({ TRUST_PROXY: trusted }, PROXY)
    // The same client (203.0.113.7) made 8 sign-in attempts: past the budget of 3 they are 429.
    t.same(statuses.slice(3), [429, 429, 429, 429, 429], `TRUST_PROXY=${trusted}: ${statuses.join(',')}`)
  }
})

t.test('a session records the address the listed proxy appended, not the one the client wrote', async (t) => {
  const app = await buildTestApp({ env: { TRUST_PROXY: '10.0.0.0/8' } })
  const sessionIp = async (remoteAddress: string, xff: string): Promise<string> => {
    const signUp = await app.inject({
      method: 'POST',
      url: '/api/auth/sign-up/email',
      remoteAddress,
      headers: { origin: WEB_ORIGIN, 'x-forwarded-for': xff },
      payload: { name: 'Proxied', email: uniqueEmail(), password: 'correct horse battery staple' },
    })
    t.equal(signUp.statusCode, 200)
    const cookie = sessionCookieOf(signUp)!
    const sessions = await call(app, 'GET', '/api/auth/list-sessions', { cookie })
    return sessions.json()[0].ipAddress
  }
  t.equal(await sessionIp(PROXY, CLIENT), CLIENT)
  t.equal(await sessionIp(PROXY, `198.51.100.9, ${CLIENT}`), CLIENT, "the client's own prefix is ignored")
  t.equal(await sessionIp(PROXY, `${CLIENT}, 10.0.0.3`), CLIENT, 'a second listed proxy is skipped')
  // A peer that is not a listed proxy: its header is not believed at all.
  t.equal(await sessionIp('192.0.2.50', CLIENT), '192.0.2.50')
})
