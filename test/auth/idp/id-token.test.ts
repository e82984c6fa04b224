// The ID token checks, against an issuer on loopback whose token endpoint answers tokens the test
// forges: wrong audience, foreign signature, wrong nonce, ... each must fail the sign-in.
import { createHash } from 'node:crypto'
import t from 'tap'
import { buildTestApp, uniqueEmail, WEB_ORIGIN } from '../../helpers/app.js'
import { Browser, CLIENT_ID, CLIENT_SECRET, signingKey, startForgingIssuer } from '../../helpers/idp.js'
import { freePort } from '../../helpers/port.js'

const apiPort = await freePort()
const API = `http://127.0.0.1:${apiPort}`
const issuer = await startForgingIssuer()
const app = await buildTestApp({
  env: { AUTH_URL: API, IDP_ISSUER: issuer.issuer, IDP_CLIENT_ID: CLIENT_ID, IDP_CLIENT_SECRET: CLIENT_SECRET },
})
await app.listen({ port: apiPort, host: '127.0.0.1' })
const otherKey = await signingKey()

let counter = 0
const claimsFor = (nonce: string) => {
  const email = uniqueEmail('idp-token')
  return { sub: `token-sub-${process.pid}-${counter++}`, email, email_verified: true, nonce }
}

/**
 * Starts a flow, lets `forge` build the ID token from the flow's nonce, and completes the
 * callback. Returns the error code (or null), and whether a session and a user came of it.
 */
async function attempt(
  forge: (nonce: string, claims: ReturnType<typeof claimsFor>) => Promise<string | undefined>,
  options: { code?: string; extraQuery?: Record<string, string> } = {},
) {
  const browser = new Browser()
  const start = await browser.request(`${API}/api/auth/sign-in/idp`)
  const authorize = new URL(start.headers.get('location')!)
  const nonce = authorize.searchParams.get('nonce')!
  const claims = claimsFor(nonce)
  issuer.state.nextIdToken = await forge(nonce, claims)
  const query = new URLSearchParams({
    code: options.code ?? 'a-code',
    state: authorize.searchParams.get('state')!,
    ...options.extraQuery,
  })
  const res = await browser.request(`${API}/api/auth/callback/idp?${query}`)
  const landed = new URL(res.headers.get('location')!)
  const session = await (await browser.request(`${API}/api/auth/get-session`)).json()
  const user = await app.db.selectFrom('user').select('id').where('email', '=', claims.email).executeTakeFirst()
  return { status: res.status, error: landed.searchParams.get('error'), landed, session, userCreated: Boolean(user), authorize }
}

t.test('a well-formed token signs in (the harness can succeed)', async (t) => {
  const result = await attempt((_nonce, claims) => issuer.sign(claims))
  t.equal(result.error, null)
  t.equal(result.landed.toString(), `${WEB_ORIGIN}/`)
  t.ok(result.session)
  t.ok(result.userCreated)
})

t.test('the code is redeemed with the PKCE verifier and the client credentials', async (t) => {
  issuer.state.tokenRequests.length = 0
  const result = await attempt((_nonce, claims) => issuer.sign(claims))
  const form = issuer.state.tokenRequests[0]!
  const challenge = createHash('sha256').update(form.get('code_verifier')!).digest('base64url')
  t.equal(result.authorize.searchParams.get('code_challenge'), challenge)
  t.equal(form.get('grant_type'), 'authorization_code')
  t.equal(form.get('redirect_uri'), `${API}/api/auth/callback/idp`)
})

const rejected: Array<[string, (nonce: string, claims: ReturnType<typeof claimsFor>) => Promise<string | undefined>]> = [
  ['a token for another audience', (_n, c) => issuer.sign({ ...c, aud: 'someone-else' })],
  ['a token for several audiences without azp naming us', (_n, c) => issuer.sign({ ...c, aud: [CLIENT_ID, 'someone-else'] })],
  ['a token signed by another key under the issuer key id', (_n, c) => issuer.sign(c, { key: otherKey.privateKey })],
  [
    'a token signed by a key the issuer never published',
    (_n, c) => issuer.sign(c, { key: otherKey.privateKey, kid: otherKey.jwk.kid! }),
  ],
  ['a token from another issuer', (_n, c) => issuer.sign({ ...c, iss: 'https://accounts.example.com' })],
  ['a token with another nonce', (_n, c) => issuer.sign({ ...c, nonce: 'replayed-from-another-flow' })],
  ['a token without a nonce', (_n, c) => issuer.sign({ ...c, nonce: undefined })],
  [
    'an expired token',
    (_n, c) => issuer.sign({ ...c, exp: Math.floor(Date.now() / 1000) - 3600, iat: Math.floor(Date.now() / 1000) - 7200 }),
  ],
  [
    'an unsigned token (alg none)',
    async (_n, c) => {
      const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')
      const now = Math.floor(Date.now() / 1000)
      return `${enc({ alg: 'none' })}.${enc({ ...c, iss: issuer.issuer, aud: CLIENT_ID, iat: now, exp: now + 300 })}.`
    },
  ],
  ['a token response without an ID token', async () => undefined],
  ['a token whose sub is a number', (_n, c) => issuer.sign({ ...c, sub: 12345 })],
  ['a token whose sub is longer than 255 characters', (_n, c) => issuer.sign({ ...c, sub: 's'.repeat(256) })],
]

for (const [name, forge] of rejected) {
  t.test(`${name} is invalid_token and signs nobody in`, async (t) => {
    const result = await attempt(forge)
    t.equal(result.status, 302)
    t.equal(result.landed.origin + result.landed.pathname, `${WEB_ORIGIN}/auth/error`)
    t.equal(result.error, 'invalid_token')
    t.equal(result.session, null)
    t.notOk(result.userCreated)
  })
}

t.test('several audiences with azp naming us are accepted', async (t) => {
  const result = await attempt((_n, c) => issuer.sign({ ...c, aud: [CLIENT_ID, 'someone-else'], azp: CLIENT_ID }))
  t.equal(result.error, null)
  t.ok(result.session)
})

t.test('a code the token endpoint refuses is invalid_code', async (t) => {
  const result = await attempt((_n, c) => issuer.sign(c), { code: 'used' })
  t.equal(result.error, 'invalid_code')
  t.equal(result.session, null)
})

t.test('an iss parameter naming another issuer is issuer_mismatch (RFC 9207)', async (t) => {
  issuer.state.tokenRequests.length = 0
  const result = await attempt((_n, c) => issuer.sign(c), { extraQuery: { iss: 'https://attacker.example.com' } })
  t.equal(result.error, 'issuer_mismatch')
  t.equal(issuer.state.tokenRequests.length, 0, 'the code never went anywhere')
  const same = await attempt((_n, c) => issuer.sign(c), { extraQuery: { iss: issuer.issuer, scope: 'openid email' } })
  t.equal(same.error, null, 'the right iss and extra provider parameters are fine')
})

t.test('a token endpoint that hangs up is provider_unavailable', async (t) => {
  const result = await attempt((_n, c) => issuer.sign(c), { code: 'hangup' })
  t.equal(result.error, 'provider_unavailable')
  t.equal(result.session, null)
})

t.test('a provider error is passed on, an odd one becomes provider_error', async (t) => {
  const denied = await attempt((_n, c) => issuer.sign(c), { extraQuery: { error: 'access_denied' } })
  t.equal(denied.error, 'access_denied')
  t.equal(denied.session, null)
  const odd = await attempt((_n, c) => issuer.sign(c), { extraQuery: { error: '<script>Weird' } })
  t.equal(odd.error, 'provider_error')
})

t.test('a token without an email is email_missing', async (t) => {
  const result = await attempt((_n, c) => issuer.sign({ ...c, email: undefined }))
  t.equal(result.error, 'email_missing')
  t.equal(result.session, null)
})

t.test('an email longer than 254 characters is not cut to fit: invalid_email', async (t) => {
  // Cut at 254, this address would be exactly someone else's.
  const long = `${'a'.repeat(240)}@example.com.evil.example`
  const result = await attempt((_n, c) => issuer.sign({ ...c, email: long }))
  t.equal(result.error, 'invalid_email')
  t.equal(result.session, null)
  t.equal(await app.db.selectFrom('user').select('id').where('email', 'like', 'aaaa%').executeTakeFirst(), undefined)
})

t.test('email_verified as the string "true" counts as verified', async (t) => {
  const result = await attempt((_n, c) => issuer.sign({ ...c, email_verified: 'true' }))
  t.equal(result.session?.user.emailVerified, true)
})

t.test('failures are audited without secrets', async (t) => {
  await attempt((_n, c) => issuer.sign({ ...c, aud: 'someone-else' }))
  const rows = await app.db
    .selectFrom('audit_event')
    .select(['details'])
    .where('action', '=', 'auth.idp.sign_in_failed')
    .execute()
  t.ok(rows.some((r) => (r.details as { error?: string }).error === 'invalid_token'))
})
