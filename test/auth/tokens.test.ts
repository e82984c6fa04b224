// Tokens for other services (issue 38) in better-auth 1.6's jwt plugin's wire format, driven by
// better-auth's own client with jwtClient() over a real socket, and verified as the AI backend
// verifies them: jose's createRemoteJWKSet against the served /api/auth/jwks, on a clock the test moves.
import { createAuthClient } from 'better-auth/client'
import { jwtClient } from 'better-auth/client/plugins'
import { createRemoteJWKSet, decodeProtectedHeader, type JWTPayload, jwtVerify } from 'jose'
import t, { type Test } from 'tap'
import { KeySeal } from '../../src/auth/tokens/keys.js'
import { actorClaim, TokenIssuer } from '../../src/auth/tokens/issuer.js'
import { maintain } from '../../src/maintenance/purge.js'
import type { Clock } from '../../src/shared/clock.js'
import { buildTestApp, call, signUp, signUpWithRole, uniqueEmail } from '../helpers/app.js'
import { apiUrl, cookieJarFetch } from '../helpers/auth-client.js'

const MINUTE = 60_000
const DAY = 24 * 60 * MINUTE
let offset = 0
const clock: Clock = { now: () => new Date(Date.now() + offset) }
const ISSUER = 'https://accounts.example.test'
const AUDIENCE = 'https://ai.example.test'
const app = await buildTestApp({ deps: { clock }, env: { JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE } })
await app.listen({ port: 0, host: '127.0.0.1' })
const base = apiUrl((app.server.address() as { port: number }).port)

/** A signed-out browser with better-auth's client and jwtClient(). */
function browser() {
  const { jar, fetch } = cookieJarFetch()
  const client = createAuthClient({ baseURL: base, plugins: [jwtClient()], fetchOptions: { customFetchImpl: fetch } })
  const cookie = () => `better-auth.session_token=${jar.get('better-auth.session_token')}`
  return { client, jar, cookie }
}

async function signedIn() {
  const b = browser()
  const email = uniqueEmail('jwt')
  const up = await b.client.signUp.email({ name: 'Token User', email, password: 'correct horse battery staple' })
  if (up.error) throw new Error(JSON.stringify(up.error))
  return { ...b, id: up.data!.user.id, email }
}

/** GET /api/auth/token through the client: the token, or the error's status and code. */
async function tokenOf(b: ReturnType<typeof browser>) {
  const res = await b.client.$fetch<{ token: string }>('/token', { method: 'GET' })
  return res.error
    ? { error: { status: res.error.status, code: (res.error as { code?: string }).code } }
    : { token: res.data!.token }
}

/** What the AI backend does: verify against the served key set, on the app's clock. */
const verify = (token: string, at = clock.now()) =>
  jwtVerify(token, createRemoteJWKSet(new URL(`${base}/api/auth/jwks`)), {
    issuer: ISSUER,
    audience: AUDIENCE,
    algorithms: ['EdDSA'],
    currentDate: at,
  })

t.test('a session gets a token the AI backend verifies: sub, role, plan, 15 minutes, no personal data', async (t) => {
  const alice = await signedIn()
  const { token } = await tokenOf(alice)
  t.ok(token, 'the token route answers with a token')
  const { payload, protectedHeader } = await verify(token!)
  t.equal(protectedHeader.alg, 'EdDSA')
  t.ok(protectedHeader.kid, 'names its key')
  t.equal(payload.sub, alice.id)
  t.equal(payload.iss, ISSUER)
  t.equal(payload.aud, AUDIENCE)
  t.match(payload, { role: 'member', plan: 'free', planExpiresAt: null })
  t.ok(payload.exp! - payload.iat! <= 900, 'lives 15 minutes at most')
  t.notOk('email' in payload || 'name' in payload || 'email_verified' in payload, 'no email or name')
  t.notMatch(JSON.stringify(payload), new RegExp(alice.email.replace(/[.+]/g, '\\$&')), 'the address appears nowhere')
})

t.test('no session, no token: 401 UNAUTHORIZED', async (t) => {
  t.same((await tokenOf(browser())).error, { status: 401, code: 'UNAUTHORIZED' })
  const forged = await call(app, 'GET', '/api/auth/token', { cookie: 'better-auth.session_token=forged.value' })
  t.equal(forged.statusCode, 401)
})

t.test('get-session sends the token in set-auth-jwt, exposed to the trusted origin by CORS', async (t) => {
  const bob = await signedIn()
  let headers: Headers | undefined
  const session = await bob.client.getSession({
    fetchOptions: {
      onSuccess: (ctx) => {
        headers = ctx.response.headers
      },
    },
  })
  t.equal(session.data?.user.id, bob.id)
  const token = headers!.get('set-auth-jwt')
  t.ok(token, 'set-auth-jwt is sent')
  t.match(headers!.get('access-control-expose-headers')!.toLowerCase(), /\bset-auth-jwt\b/, 'the page may read it')
  t.equal((await verify(token!)).payload.sub, bob.id)

  const signedOut = await call(app, 'GET', '/api/auth/get-session')
  t.equal(signedOut.headers['set-auth-jwt'], undefined, 'no session, no token')
})

t.test('the key set is public Ed25519 keys only, and the private key is sealed in the database', async (t) => {
  const { data, error } = await browser().client.jwks()
  t.equal(error, null)
  const keys = (data as { keys: Record<string, string>[] }).keys
  t.ok(keys.length >= 1)
  for (const key of keys) {
    t.match(key, { kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig', kid: String, x: String })
    t.notOk('d' in key, 'no private part')
  }
  const rows = await app.db.selectFrom('jwks').selectAll().execute()
  for (const row of rows) {
    t.match(row.private_key, /^k1\./, 'sealed')
    t.notMatch(row.private_key, /"d"/, 'no JWK in the clear')
    const seal = new KeySeal([process.env.NEVER_SET ?? 'another-secret-that-is-long-enough-000000'])
    t.equal(seal.open(row.id, row.private_key), null, 'another AUTH_SECRET cannot open it')
  }
  // The key id is bound in: a sealed key moved onto another id does not open.
  const seal = new KeySeal(app.config.auth.secrets)
  const sealed = seal.seal('kid-a', '{"d":"x"}')
  t.equal(seal.open('kid-a', sealed), '{"d":"x"}')
  t.equal(seal.open('kid-b', sealed), null)
  // Every configured key opens what the first sealed (AUTH_SECRET=new,old).
  t.equal(
    new KeySeal(['new-secret-that-is-long-enough-0000000000', ...app.config.auth.secrets]).open('kid-a', sealed),
    '{"d":"x"}',
  )
})

t.test('the plan in the token follows the user row; a token is reused for 30 s only while nothing changed', async (t) => {
  const carol = await signedIn()
  const first = (await tokenOf(carol)).token!
  t.equal((await tokenOf(carol)).token, first, 'the same token moments later')
  const expires = new Date(clock.now().getTime() + 30 * DAY)
  await app.db.updateTable('user').set({ plan: 'premium', plan_expires_at: expires }).where('id', '=', carol.id).execute()
  const after = (await tokenOf(carol)).token!
  t.not(after, first, 'a changed row gets a new token')
  t.match((await verify(after)).payload, { plan: 'premium', planExpiresAt: Math.floor(expires.getTime() / 1000) })
  // A lapsed paid plan is the free plan, as the usage limits read it.
  await app.db
    .updateTable('user')
    .set({ plan_expires_at: new Date(clock.now().getTime() - MINUTE) })
    .where('id', '=', carol.id)
    .execute()
  t.match((await verify((await tokenOf(carol)).token!)).payload, { plan: 'free' })
})

t.test('every revocation path yields no new token: sign-out, revoke, ban, deletion', async (t) => {
  const refused = async (t: Test, b: ReturnType<typeof browser>, what: string) => {
    t.same((await tokenOf(b)).error, { status: 401, code: 'UNAUTHORIZED' }, `${what}: no token`)
    let header: string | null = 'unset'
    await b.client.getSession({
      fetchOptions: {
        onSuccess: (ctx) => {
          header = ctx.response.headers.get('set-auth-jwt')
        },
      },
    })
    t.equal(header, null, `${what}: get-session sends none`)
  }

  const signOut = await signedIn()
  t.ok((await tokenOf(signOut)).token)
  const stale = signOut.cookie()
  await signOut.client.signOut()
  await refused(t, signOut, 'signed out')
  t.equal((await call(app, 'GET', '/api/auth/token', { cookie: stale })).statusCode, 401, 'the old cookie replayed: none')

  // Revoked from another browser of the same account.
  const revoked = await signedIn()
  const other = browser()
  await other.client.signIn.email({ email: revoked.email, password: 'correct horse battery staple' })
  t.ok((await tokenOf(revoked)).token)
  const sessions = await other.client.listSessions()
  const target = sessions.data!.find((s) => !(s as { current?: boolean }).current)!
  await call(app, 'POST', '/api/auth/revoke-session', { cookie: other.cookie(), body: { id: target.id } })
  await refused(t, revoked, 'revoked')
  t.ok((await tokenOf(other)).token, 'the browser that revoked keeps its own')

  const banned = await signedIn()
  t.ok((await tokenOf(banned)).token)
  const admin = await signUpWithRole(app, 'admin')
  const ban = await call(app, 'POST', `/api/v1/admin/users/${banned.id}/ban`, { cookie: admin.cookie, body: { reason: 'test' } })
  t.equal(ban.statusCode, 200, ban.body)
  await refused(t, banned, 'banned')

  const deleted = await signedIn()
  t.ok((await tokenOf(deleted)).token)
  const gone = await call(app, 'DELETE', '/api/v1/me', {
    cookie: deleted.cookie(),
    body: { password: 'correct horse battery staple' },
  })
  t.equal(gone.statusCode, 204, gone.body)
  await refused(t, deleted, 'deleted')
})

t.test(
  'tokens verify against the served key set across a key rotation; a retired key goes once its last token expired',
  async (t) => {
    const dave = await signedIn()
    const before = (await tokenOf(dave)).token!
    const oldKid = decodeProtectedHeader(before).kid!
    const oldKey = await app.db.selectFrom('jwks').selectAll().where('id', '=', oldKid).executeTakeFirstOrThrow()

    // Half an hour before the key's end: the maintenance task publishes the next one.
    offset = oldKey.expires_at.getTime() - Date.now() - 30 * MINUTE
    const run = await maintain(app)
    t.equal(run.keys.created, true, 'the next key is made')
    t.equal((await maintain(app)).keys.created, false, 'once')
    const published = (await browser().client.jwks()).data as { keys: { kid: string }[] }
    t.equal(published.keys.length, 2, 'both keys are served')
    const newKid = published.keys.map((k) => k.kid).find((k) => k !== oldKid)!

    // Published, not yet signing: a verifier that cached the set minutes ago meets it first.
    const stillOld = await call(app, 'GET', '/api/auth/token', { cookie: dave.cookie() })
    t.equal(decodeProtectedHeader(stillOld.json().token).kid, oldKid, 'the old key signs until the new one was out 10 minutes')
    const oldToken = stillOld.json().token as string

    offset += 11 * MINUTE
    const newToken = (await call(app, 'GET', '/api/auth/token', { cookie: dave.cookie() })).json().token as string
    t.equal(decodeProtectedHeader(newToken).kid, newKid, 'the new key signs')
    t.equal((await verify(oldToken)).payload.sub, dave.id, 'a token of the old key still verifies')
    t.equal((await verify(newToken)).payload.sub, dave.id, 'a token of the new key verifies')

    // The old key ended; its last token may live 15 minutes more (and a minute of clock skew).
    offset = oldKey.expires_at.getTime() - Date.now() + 10 * MINUTE
    t.equal((await maintain(app)).keys.retired, 0, 'kept while a token of it may live')
    t.ok(((await browser().client.jwks()).data as { keys: { kid: string }[] }).keys.some((k) => k.kid === oldKid))
    offset = oldKey.expires_at.getTime() - Date.now() + 17 * MINUTE
    t.equal((await maintain(app)).keys.retired, 1, 'then deleted')
    const after = ((await browser().client.jwks()).data as { keys: { kid: string }[] }).keys.map((k) => k.kid)
    t.same(after, [newKid], 'only the new key is served')
    await t.rejects(
      verify(oldToken, new Date(jwtIat(oldToken) * 1000)),
      { code: 'ERR_JWKS_NO_MATCHING_KEY' },
      'the old key verifies nothing any more',
    )
    t.equal((await verify((await tokenOf(dave)).token!)).payload.sub, dave.id)
  },
)

const jwtIat = (token: string) => (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as JWTPayload).iat!

t.test('an impersonation session carries the administrator as RFC 8693 act (the hook, through the real signer)', async (t) => {
  t.same(actorClaim(null), {})
  t.same(actorClaim(undefined), {})
  const user = await signUp(app)
  const admin = await signUpWithRole(app, 'admin')
  const session = await call(app, 'GET', '/api/auth/get-session', { cookie: user.cookie })
  const { token_hash } = await app.db
    .selectFrom('session')
    .select('token_hash')
    .where('id', '=', session.json().session.id)
    .executeTakeFirstOrThrow()
  const { user: signedInUser, session: s } = (await app.sessions.validateHash(token_hash))!
  const issuer = new TokenIssuer(app.signingKeys, clock, { ...app.config.jwt, includeEmail: true })
  const acting = await verify(await issuer.issue(signedInUser, { id: s.id, impersonatedBy: admin.id }))
  t.same(acting.payload.act, { sub: admin.id }, 'the administrator acts')
  t.equal(acting.payload.sub, user.id, 'for the user')
  t.equal(acting.payload.email, user.email, 'JWT_INCLUDE_EMAIL adds the address')
  const own = await verify(await issuer.issue(signedInUser, { id: `${s.id}-own` }))
  t.notOk('act' in own.payload, "the user's own session has no actor")
})
