// The provider routes when the provider is not configured, unreachable or not what it claims.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { buildTestApp, call, signUp } from '../../helpers/app.js'
import { CLIENT_ID, startForgingIssuer } from '../../helpers/idp.js'
import { freePort } from '../../helpers/port.js'

t.test('without IDP_CLIENT_ID the provider routes answer 503 and say what to set', async (t) => {
  const app = await buildTestApp({ env: { IDP_CLIENT_ID: '' } })
  const responses = [
    await app.inject({ method: 'GET', url: '/api/auth/sign-in/idp' }),
    await call(app, 'POST', '/api/auth/sign-in/social', { body: { provider: 'idp' } }),
    await app.inject({ method: 'GET', url: '/api/auth/callback/idp?code=x&state=y' }),
  ]
  for (const res of responses) {
    t.equal(res.statusCode, 503)
    t.match(res.json(), { code: 'SERVICE_UNAVAILABLE', status: 503, message: /IDP_CLIENT_ID/ })
    t.notOk(res.cookies.find((c) => c.name === 'idp_flow'))
  }
  t.test('and the rest of the service works', async (t) => {
    const user = await signUp(app)
    const session = await call(app, 'GET', '/api/auth/get-session', { cookie: user.cookie })
    t.equal(session.json().user.id, user.id)
  })
})

t.test('an unreachable provider is 502 at the start, with no flow cookie', async (t) => {
  const closedPort = await freePort()
  const app = await buildTestApp({ env: { IDP_ISSUER: `http://127.0.0.1:${closedPort}`, IDP_CLIENT_ID: CLIENT_ID } })
  const res = await app.inject({ method: 'GET', url: '/api/auth/sign-in/idp' })
  t.equal(res.statusCode, 502)
  t.match(res.json(), { code: 'BAD_GATEWAY', status: 502 })
  t.notOk(res.cookies.find((c) => c.name === 'idp_flow'))
})

t.test('a discovery document naming another issuer is refused', async (t) => {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(
      JSON.stringify({
        issuer: 'https://accounts.example.com',
        authorization_endpoint: 'https://accounts.example.com/auth',
        token_endpoint: 'https://accounts.example.com/token',
        jwks_uri: 'https://accounts.example.com/jwks',
      }),
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const { port } = server.address() as AddressInfo
  const app = await buildTestApp({ env: { IDP_ISSUER: `http://127.0.0.1:${port}`, IDP_CLIENT_ID: CLIENT_ID } })
  const res = await app.inject({ method: 'GET', url: '/api/auth/sign-in/idp' })
  t.equal(res.statusCode, 502)
  t.equal(res.json().code, 'BAD_GATEWAY')
})

t.test('behind https the flow cookie is __Host- prefixed: Secure, Path=/, never the shared domain', async (t) => {
  const issuer = await startForgingIssuer()
  const app = await buildTestApp({
    env: {
      AUTH_URL: 'https://api.example.com',
      AUTH_COOKIE_DOMAIN: 'example.com',
      IDP_ISSUER: issuer.issuer,
      IDP_CLIENT_ID: CLIENT_ID,
    },
  })
  const res = await app.inject({ method: 'GET', url: '/api/auth/sign-in/idp' })
  t.equal(res.statusCode, 302)
  t.equal(
    new URL(res.headers.location as string).searchParams.get('redirect_uri'),
    'https://api.example.com/api/auth/callback/idp',
  )
  const flow = res.cookies.find((c) => c.name === '__Host-idp_flow')
  t.ok(flow, JSON.stringify(res.cookies))
  t.equal(flow?.secure, true)
  t.equal(flow?.httpOnly, true)
  t.equal(flow?.path, '/')
  t.equal(flow?.domain, undefined, 'host-only, whatever AUTH_COOKIE_DOMAIN says')
  // The callback reads it back: a state that does not match is refused, an absent cookie likewise.
  const state = new URL(res.headers.location as string).searchParams.get('state')
  const cookie = `__Host-idp_flow=${flow?.value}`
  const back = await app.inject({ method: 'GET', url: `/api/auth/callback/idp?state=${state}x&code=c`, headers: { cookie } })
  t.match(back.headers.location, /state_mismatch/)
  t.match(back.headers['set-cookie'], /__Host-idp_flow=;/, 'the flow is cleared, once read')
})
