// Passkeys (issue 28) in better-auth 1.6's wire format, driven by better-auth's own client with
// `passkeyClient()` from @better-auth/passkey over a real socket, a software authenticator behind
// navigator.credentials; the steps an attacker would replay or bend are sent by hand. The browser
// with a real (virtual) authenticator is test/auth/passkey-browser.test.ts.
import { passkeyClient } from '@better-auth/passkey/client'
import { createAuthClient } from 'better-auth/client'
import t from 'tap'
import { issueToken } from '../../src/auth/links/verification.js'
import { LAST_LOGIN_METHOD_COOKIE } from '../../src/auth/sign-in/step.js'
import type { Clock } from '../../src/shared/clock.js'
import {
  buildTestApp,
  call,
  proveAddress,
  sessionCookieOf,
  signUp,
  signUpWithRole,
  uniqueEmail,
  WEB_ORIGIN,
} from '../helpers/app.js'
import { apiUrl, cookieJarFetch } from '../helpers/auth-client.js'
import { credentialJson, SoftAuthenticator } from '../helpers/authenticator.js'
import { auditEvents, eachIsUnauthorized, eachIsValidationError, verificationsOf } from '../helpers/expect.js'
import {
  assertionOf,
  CHALLENGE_COOKIE,
  challengeCookieOf,
  postAssertion,
  registerPasskey,
  registrationOf,
  signInWithPasskey,
} from '../helpers/passkey.js'

const DAY = 24 * 60 * 60 * 1000
/** The app's clock, moved by the freshness and expiry tests. */
let offset = 0
const clock: Clock = { now: () => new Date(Date.now() + offset) }
const app = await buildTestApp({ deps: { clock } })
await app.listen({ port: 0, host: '127.0.0.1' })
const { port } = app.server.address() as { port: number }

/** A browser on the web origin: better-auth's client with passkeyClient(), and its cookie jar. */
function browser() {
  const { jar, fetch } = cookieJarFetch('follow')
  const client = createAuthClient({ baseURL: apiUrl(port), plugins: [passkeyClient()], fetchOptions: { customFetchImpl: fetch } })
  const cookie = () => `better-auth.session_token=${jar.get('better-auth.session_token')}`
  return { client, jar, cookie }
}

/** A signed-up member in a browser whose authenticator is the process's navigator.credentials. */
async function member(authenticator = new SoftAuthenticator(WEB_ORIGIN)) {
  const b = browser()
  const email = uniqueEmail('passkey')
  const up = await b.client.signUp.email({ name: 'Passkey User', email, password: 'correct horse battery staple' })
  if (up.error) throw new Error(JSON.stringify(up.error))
  await proveAddress(app, up.data!.user.id)
  authenticator.install()
  return { ...b, id: up.data!.user.id, email, authenticator }
}

const passkeyRows = (userId: string) => app.db.selectFrom('passkey').selectAll().where('user_id', '=', userId).execute()
const sessionsOf = (userId: string) => app.db.selectFrom('session').selectAll().where('user_id', '=', userId).execute()
const noticesOf = async (userId: string) =>
  (await verificationsOf(app.db, userId).where('purpose', '=', 'security-notice').execute()).map((r) => r.data.event)

t.test('register, sign out, sign in with the passkey, list, rename, delete; refused after deletion', async (t) => {
  const alice = await member()
  const added = await alice.client.passkey.addPasskey({ name: 'Laptop' })
  t.equal(added.error, null, JSON.stringify(added.error))
  const passkey = added.data!
  t.match(passkey, {
    name: 'Laptop',
    userId: alice.id,
    counter: 0,
    backedUp: false,
    deviceType: 'singleDevice',
    transports: 'internal',
  })
  t.notOk('userHandle' in passkey, 'the user handle is not shown')
  t.notOk(alice.jar.has(CHALLENGE_COOKIE), 'the challenge cookie was cleared once used')
  const [row] = await passkeyRows(alice.id)
  t.equal(row?.credential_id, alice.authenticator.credentials[0]!.id.toString('base64url'), 'stored under the credential id')
  t.equal(row?.user_handle, alice.authenticator.credentials[0]!.userHandle.toString('base64url'), 'with the handle it was given')
  t.not(row?.user_handle, Buffer.from(alice.id).toString('base64url'), 'a random handle, not the user id')

  t.equal((await alice.client.signOut()).error, null)
  t.equal((await alice.client.getSession()).data, null)

  const signedIn = await alice.client.signIn.passkey()
  t.equal(signedIn.error, null, JSON.stringify(signedIn.error))
  t.equal(signedIn.data?.user.email, alice.email)
  t.equal(signedIn.data?.session.userId, alice.id)
  t.notOk(JSON.stringify(signedIn.data).includes('token'), 'no token in the answer')
  const session = await alice.client.getSession()
  t.equal(session.data?.user.id, alice.id, 'the session cookie works')
  t.equal(alice.jar.get(LAST_LOGIN_METHOD_COOKIE), 'passkey', 'the last-login-method cookie names the passkey')
  const stored = await app.db
    .selectFrom('session')
    .selectAll()
    .where('id', '=', session.data!.session.id)
    .executeTakeFirstOrThrow()
  t.equal(stored.two_factor_verified, true, 'user verification made it a two-factor sign-in')
  const [used] = await passkeyRows(alice.id)
  t.equal(Number(used!.counter), 1, 'the signature counter moved on')
  t.type(used!.last_used_at, Date)

  const listed = await alice.client.passkey.listUserPasskeys()
  t.same(
    listed.data?.map((p) => [p.id, p.name]),
    [[passkey.id, 'Laptop']],
  )
  const renamed = await alice.client.passkey.updatePasskey({ id: passkey.id, name: '  Work laptop ' })
  t.equal(renamed.error, null)
  t.equal(renamed.data?.passkey.name, 'Work laptop', 'trimmed')
  const deleted = await alice.client.passkey.deletePasskey({ id: passkey.id })
  t.same(deleted.data, { status: true })
  t.same(await passkeyRows(alice.id), [])

  await alice.client.signOut()
  const refused = await alice.client.signIn.passkey()
  t.match(refused.error, { status: 401, code: 'PASSKEY_NOT_FOUND' })
  t.equal((await alice.client.getSession()).data, null, 'no session')

  const actions = (await auditEvents(app.db, { action: 'auth.passkey.%', targetId: alice.id })).map((e) => [e.action, e.details])
  t.same(actions, [
    ['auth.passkey.added', { passkeyId: passkey.id }],
    ['auth.passkey.renamed', { passkeyId: passkey.id }],
    ['auth.passkey.removed', { passkeyId: passkey.id, sessionsEnded: 0 }],
  ])
  const signIns = await auditEvents(app.db, { action: 'auth.sign_in', actorId: alice.id })
  t.match(signIns.at(-1)?.details, { method: 'passkey', twoFactor: true })
  t.same(await noticesOf(alice.id), ['passkey_added', 'passkey_removed'], 'the owner was mailed both changes')
})

t.test('the security activity shows passkey changes and how a sign-in was made', async (t) => {
  const bob = await member()
  await bob.client.passkey.addPasskey()
  await bob.client.signOut()
  await bob.client.signIn.passkey()
  const res = await call(app, 'GET', '/api/v1/me/security-events?limit=100', { cookie: bob.cookie() })
  const items = res.json().items as { kind: string; method: string | null }[]
  t.same(
    items.map((i) => [i.kind, i.method]),
    [
      ['sign_in', 'passkey'],
      ['passkey_added', null],
      ['sign_in', 'email'],
      ['account_created', null],
    ],
  )
})

t.test('a passkey sign-in stands for the second factor', async (t) => {
  const carol = await member()
  await carol.client.passkey.addPasskey()
  await app.db.updateTable('user').set({ two_factor_enabled: true }).where('id', '=', carol.id).execute()
  await carol.client.signOut()
  const signedIn = await carol.client.signIn.passkey()
  t.equal((signedIn.data?.user as { twoFactorEnabled?: boolean } | undefined)?.twoFactorEnabled, true)
  t.equal((await carol.client.getSession()).data?.user.id, carol.id, 'signed in, no two_factor challenge')
  t.notOk(carol.jar.has('better-auth.two_factor'))
})

t.test(
  "the options name the web origin's relying party, require user verification and exclude the account's passkeys",
  async (t) => {
    const rita = await member()
    const first = await registerPasskey(app, rita.authenticator, rita.cookie())
    const { options } = await registrationOf(app, new SoftAuthenticator(WEB_ORIGIN), rita.cookie())
    t.match(options, {
      rp: { id: 'localhost', name: 'Insight' },
      user: { name: rita.email, displayName: 'Passkey User' },
      attestation: 'none',
      authenticatorSelection: { userVerification: 'required', residentKey: 'preferred' },
      excludeCredentials: [{ id: first.credentialID, type: 'public-key' }],
    })
    t.equal(options.user.id, rita.authenticator.credentials[0]!.userHandle.toString('base64url'), 'one handle per account')
    const signIn = await assertionOf(app, rita.authenticator)
    t.match(signIn.options, { rpId: 'localhost', userVerification: 'required' })
    t.notOk(signIn.options.allowCredentials, 'anyone may answer a sign-in: the passkey names its account')
  },
)

t.test('every route but the sign-in ones needs a session', async (t) => {
  await eachIsUnauthorized(t, app, [
    ['GET', '/api/auth/passkey/generate-register-options'],
    ['POST', '/api/auth/passkey/verify-registration', { response: {} }],
    ['GET', '/api/auth/passkey/list-user-passkeys'],
    ['POST', '/api/auth/passkey/update-passkey', { id: 'x', name: 'y' }],
    ['POST', '/api/auth/passkey/delete-passkey', { id: 'x' }],
  ])
})

t.test('adding a passkey needs a session started within a day (better-auth freshAge)', async (t) => {
  const dave = await member()
  const fresh = await registrationOf(app, dave.authenticator, dave.cookie())
  offset = DAY
  t.teardown(() => {
    offset = 0
  })
  const options = await call(app, 'GET', '/api/auth/passkey/generate-register-options', { cookie: dave.cookie() })
  t.match(options.json(), { status: 403, code: 'SESSION_NOT_FRESH', message: 'Session is not fresh' })
  t.notOk(options.headers['set-cookie']?.toString().includes(CHALLENGE_COOKIE), 'no challenge issued')
  // Options fetched while fresh, answered once stale: refused too, nothing stored.
  const verify = await call(app, 'POST', '/api/auth/passkey/verify-registration', {
    cookie: fresh.cookie,
    body: { response: fresh.response },
  })
  t.equal(verify.json().code, 'SESSION_NOT_FRESH')
  t.same(await passkeyRows(dave.id), [])
  // The list, a rename, a deletion need no fresh session.
  t.equal((await call(app, 'GET', '/api/auth/passkey/list-user-passkeys', { cookie: dave.cookie() })).statusCode, 200)
})

t.test("someone else's passkey is the same 404 as no passkey, and stays as it was", async (t) => {
  const owner = await member()
  const theirs = await registerPasskey(app, owner.authenticator, owner.cookie(), 'Theirs')
  const stranger = await signUp(app)
  for (const [url, body] of [
    ['/api/auth/passkey/update-passkey', { id: theirs.id, name: 'Mine now' }],
    ['/api/auth/passkey/delete-passkey', { id: theirs.id }],
  ] as const) {
    const other = await call(app, 'POST', url, { cookie: stranger.cookie, body })
    const none = await call(app, 'POST', url, { cookie: stranger.cookie, body: { ...body, id: 'no-such-passkey' } })
    t.equal(other.statusCode, 404, url)
    t.same(other.json(), none.json(), `${url}: the same answer`)
    t.match(other.json(), { code: 'PASSKEY_NOT_FOUND', status: 404, message: 'Passkey not found', defined: false })
  }
  const list = await call(app, 'GET', '/api/auth/passkey/list-user-passkeys', { cookie: stranger.cookie })
  t.same(list.json(), [], "the stranger's list is empty")
  t.match(await passkeyRows(owner.id), [{ id: theirs.id, name: 'Theirs' }], 'not renamed, not deleted')
})

t.test('bad, oversized and unknown input is a 400 in the one error shape, and writes nothing', async (t) => {
  const erin = await member()
  const { cookie, response } = await registrationOf(app, erin.authenticator, erin.cookie())
  const r = response as { response: Record<string, unknown> }
  const verify = (body: unknown) => call(app, 'POST', '/api/auth/passkey/verify-registration', { cookie, body })
  await eachIsValidationError(
    t,
    [
      {},
      { response: {} },
      { response, name: 'x', userId: 'someone-else' },
      { response: { ...response, extra: true } },
      { response: { ...response, type: 'password' } },
      { response: { ...response, response: { ...r.response, clientDataJSON: 'A'.repeat(9000) } } },
      { response: { ...response, response: { ...r.response, attestationObject: 'not base64url!' } } },
      { response, name: 'n'.repeat(101) },
      { response, name: 'tab\tin name' },
    ],
    verify,
  )
  const big = await verify({ response, name: 'x'.repeat(70_000) })
  t.match(big.json(), { status: 413, code: 'PAYLOAD_TOO_LARGE' })
  const query = await call(app, 'GET', '/api/auth/passkey/generate-register-options?context=signup', { cookie: erin.cookie() })
  t.match(query.json(), { status: 400, code: 'VALIDATION_ERROR' }, 'an unknown query key')
  const signInQuery = await call(app, 'GET', '/api/auth/passkey/generate-authenticate-options?userId=someone')
  t.match(signInQuery.json(), { status: 400, code: 'VALIDATION_ERROR' }, 'the sign-in options take no query')
  await eachIsValidationError(t, [{}, { id: 'x' }, { id: 'x', name: '' }, { id: 'x', name: 'y', userId: 'z' }], (body) =>
    call(app, 'POST', '/api/auth/passkey/update-passkey', { cookie: erin.cookie(), body }),
  )
  await eachIsValidationError(t, [{}, { id: '' }, { id: 'x', all: true }], (body) =>
    call(app, 'POST', '/api/auth/passkey/delete-passkey', { cookie: erin.cookie(), body }),
  )
  await eachIsValidationError(t, [{}, { response: {} }, { response: { id: 'x', rawId: 'x', type: 'public-key' } }], (body) =>
    call(app, 'POST', '/api/auth/passkey/verify-authentication', { body }),
  )
  t.same(await passkeyRows(erin.id), [], 'nothing was added')
  // The challenge was not spent on input refused before it was read: the well-formed answer still works.
  t.equal((await verify({ response })).statusCode, 200)
})

t.test('a challenge serves one ceremony, once, for five minutes', async (t) => {
  const frank = await member()
  const reg = await registrationOf(app, frank.authenticator, frank.cookie())
  const first = await call(app, 'POST', '/api/auth/passkey/verify-registration', {
    cookie: reg.cookie,
    body: { response: reg.response },
  })
  t.equal(first.statusCode, 200)
  const again = await call(app, 'POST', '/api/auth/passkey/verify-registration', {
    cookie: reg.cookie,
    body: { response: reg.response },
  })
  t.match(again.json(), { status: 400, code: 'CHALLENGE_NOT_FOUND', message: 'Challenge not found' })

  const noCookie = await call(app, 'POST', '/api/auth/passkey/verify-authentication', {
    body: { response: (await assertionOf(app, frank.authenticator)).response },
  })
  t.match(noCookie.json(), { status: 400, code: 'CHALLENGE_NOT_FOUND' })

  // A registration's challenge does not serve a sign-in.
  const other = await registrationOf(app, new SoftAuthenticator(WEB_ORIGIN), frank.cookie())
  const signIn = await assertionOf(app, frank.authenticator)
  const crossed = await postAssertion(app, { cookie: other.cookie.split('; ')[1]!, response: signIn.response })
  t.equal(crossed.json().code, 'CHALLENGE_NOT_FOUND')

  const late = await assertionOf(app, frank.authenticator)
  offset = 5 * 60 * 1000
  t.teardown(() => {
    offset = 0
  })
  t.equal((await postAssertion(app, late)).json().code, 'CHALLENGE_NOT_FOUND', 'expired after five minutes')
  offset = 0
  t.equal((await sessionsOf(frank.id)).length, 1, 'only the sign-up session')
})

t.test('a replayed assertion is refused, with its own challenge or a new one', async (t) => {
  const grace = await member()
  await registerPasskey(app, grace.authenticator, grace.cookie())
  const assertion = await assertionOf(app, grace.authenticator)
  const ok = await postAssertion(app, assertion)
  t.equal(ok.statusCode, 200)
  t.ok(sessionCookieOf(ok))
  const replay = await postAssertion(app, assertion)
  t.match(replay.json(), { status: 400, code: 'CHALLENGE_NOT_FOUND' }, 'the challenge was used up')
  t.notOk(sessionCookieOf(replay))
  const fresh = await assertionOf(app, grace.authenticator)
  const replayed = await postAssertion(app, { cookie: fresh.cookie, response: assertion.response })
  t.match(replayed.json(), { status: 401, code: 'AUTHENTICATION_FAILED' }, 'signed over another challenge')
  t.equal((await sessionsOf(grace.id)).length, 2, 'the sign-up and the one sign-in')
})

t.test('an assertion made on another origin is refused (a phishing page relaying it)', async (t) => {
  const heidi = await member()
  await registerPasskey(app, heidi.authenticator, heidi.cookie())
  heidi.authenticator.origin = 'https://evil.example'
  const relayed = await signInWithPasskey(app, heidi.authenticator)
  t.match(relayed.json(), { status: 401, code: 'AUTHENTICATION_FAILED' })
  const reg = await registrationOf(app, new SoftAuthenticator('https://evil.example'), heidi.cookie())
  const added = await call(app, 'POST', '/api/auth/passkey/verify-registration', {
    cookie: reg.cookie,
    body: { response: reg.response },
  })
  t.match(added.json(), { status: 400, code: 'FAILED_TO_VERIFY_REGISTRATION' })
  t.equal((await passkeyRows(heidi.id)).length, 1, 'only the first passkey')
  t.equal((await sessionsOf(heidi.id)).length, 1, 'no session from the relayed assertion')
})

t.test('user verification is required, to add a passkey and to sign in with one', async (t) => {
  const ivan = await member()
  await registerPasskey(app, ivan.authenticator, ivan.cookie())
  ivan.authenticator.userVerified = false
  t.match((await signInWithPasskey(app, ivan.authenticator)).json(), { status: 401, code: 'AUTHENTICATION_FAILED' })
  const unverified = new SoftAuthenticator(WEB_ORIGIN)
  unverified.userVerified = false
  const reg = await registrationOf(app, unverified, ivan.cookie())
  const added = await call(app, 'POST', '/api/auth/passkey/verify-registration', {
    cookie: reg.cookie,
    body: { response: reg.response },
  })
  t.equal(added.json().code, 'FAILED_TO_VERIFY_REGISTRATION')
  t.equal((await passkeyRows(ivan.id)).length, 1)
})

t.test('a signature counter that does not move forward is refused; one that is always zero is not', async (t) => {
  const judy = await member()
  await registerPasskey(app, judy.authenticator, judy.cookie())
  t.equal((await signInWithPasskey(app, judy.authenticator)).statusCode, 200)
  judy.authenticator.counterStep = 0 // a clone of the authenticator answers with the counter already seen
  const cloned = await signInWithPasskey(app, judy.authenticator)
  t.match(cloned.json(), { status: 401, code: 'AUTHENTICATION_FAILED' })
  t.equal(Number((await passkeyRows(judy.id))[0]!.counter), 1, 'the counter stays where it was')
  const failed = await auditEvents(app.db, { action: 'auth.sign_in_failed', targetId: judy.id })
  t.match(failed.at(-1)?.details, { method: 'passkey' }, 'the owner sees the refused attempt')

  const zero = new SoftAuthenticator(WEB_ORIGIN)
  zero.counterStep = 0
  const kim = await signUp(app)
  await registerPasskey(app, zero, kim.cookie)
  for (let i = 0; i < 2; i++) t.equal((await signInWithPasskey(app, zero)).statusCode, 200, 'a counter-less authenticator')
})

t.test('two assertions with one counter value, posted at once: one signs in (the counter is compare-and-set)', async (t) => {
  const sam = await member()
  await registerPasskey(app, sam.authenticator, sam.cookie())
  const first = await assertionOf(app, sam.authenticator)
  sam.authenticator.credentials[0]!.counter -= 1 // the clone answers with the same counter
  const second = await assertionOf(app, sam.authenticator)
  const answers = await Promise.all([postAssertion(app, first), postAssertion(app, second)])
  t.same(answers.map((r) => r.statusCode).sort(), [200, 401])
  t.equal((await sessionsOf(sam.id)).length, 2, 'the sign-up and one sign-in')
})

t.test('the assertion must carry back the user handle the passkey was given', async (t) => {
  const leo = await member()
  await registerPasskey(app, leo.authenticator, leo.cookie())
  leo.authenticator.userHandleOverride = Buffer.from('another handle entirely')
  t.match((await signInWithPasskey(app, leo.authenticator)).json(), { status: 401, code: 'AUTHENTICATION_FAILED' })
})

t.test("a passkey signs in its own account only: another account's session cannot register or claim it", async (t) => {
  const mia = await member()
  const ned = await member()
  // Ned's browser holds Mia's registration challenge (a planted cookie): refused, nothing stored.
  const planted = await registrationOf(app, mia.authenticator, mia.cookie())
  const challenge = planted.cookie.split('; ')[1]!
  const res = await call(app, 'POST', '/api/auth/passkey/verify-registration', {
    cookie: `${ned.cookie()}; ${challenge}`,
    body: { response: planted.response },
  })
  t.match(res.json(), { status: 401, code: 'YOU_ARE_NOT_ALLOWED_TO_REGISTER_THIS_PASSKEY' })
  t.same([...(await passkeyRows(mia.id)), ...(await passkeyRows(ned.id))], [])

  // Mia's passkey signs Mia in, whoever asks.
  const miaKey = new SoftAuthenticator(WEB_ORIGIN)
  await registerPasskey(app, miaKey, mia.cookie())
  const anywhere = await postAssertion(app, await assertionOf(app, miaKey))
  t.equal(anywhere.json().user.id, mia.id, "the passkey's account")
  // A ceremony Ned started signed in (his own passkeys only) is not finished with Mia's.
  const nedOptions = await call(app, 'GET', '/api/auth/passkey/generate-authenticate-options', { cookie: ned.cookie() })
  t.same(nedOptions.json().allowCredentials ?? [], [], 'Ned has no passkey to name')
  const assertion = miaKey.assertion(miaKey.credentials[0]!, Buffer.from(nedOptions.json().challenge, 'base64url'))
  const wrongUser = await postAssertion(app, {
    cookie: `${ned.cookie()}; ${challengeCookieOf(nedOptions)}`,
    response: credentialJson(assertion),
  })
  t.match(wrongUser.json(), { status: 401, code: 'AUTHENTICATION_FAILED' })
  t.equal((await sessionsOf(mia.id)).length, 2, 'the sign-up and the one sign-in')
})

t.test('a banned user gets nothing from a passkey', async (t) => {
  const admin = await signUpWithRole(app, 'admin')
  const olga = await member()
  await registerPasskey(app, olga.authenticator, olga.cookie())
  const ban = await call(app, 'POST', `/api/v1/admin/users/${olga.id}/ban`, { cookie: admin.cookie, body: { reason: 'test' } })
  t.equal(ban.statusCode, 200)
  const res = await signInWithPasskey(app, olga.authenticator)
  t.match(res.json(), { status: 403, code: 'BANNED_USER' })
  t.notOk(sessionCookieOf(res))
  t.same(await sessionsOf(olga.id), [])
  t.equal(Number((await passkeyRows(olga.id))[0]!.counter), 0, 'the passkey was not used')
})

t.test('"this wasn\'t me" never removes a passkey: a mailbox alone takes no second factor away', async (t) => {
  const pat = await member()
  await registerPasskey(app, pat.authenticator, pat.cookie())
  const { issueToken } = await import('../../src/auth/links/verification.js')
  const token = await issueToken(app.db, 'security-notice', pat.id, {
    expiresAt: new Date(Date.now() + DAY),
    data: { event: 'passkey_added', at: new Date().toISOString(), email: pat.email },
  })
  const secured = await call(app, 'POST', '/api/auth/secure-account', { body: { token } })
  t.equal(secured.statusCode, 200, secured.body)
  t.equal((await passkeyRows(pat.id)).length, 1)
  t.equal((await signInWithPasskey(app, pat.authenticator)).statusCode, 200, 'the passkey still signs in')
  const [event] = await auditEvents(app.db, { action: 'auth.account_secured', targetId: pat.id })
  t.notMatch(event?.details ?? {}, { passkeysRemoved: Number })
})

t.test('the personal-data export lists the passkeys', async (t) => {
  const quinn = await member()
  await registerPasskey(app, quinn.authenticator, quinn.cookie(), 'Phone')
  const res = await call(app, 'GET', '/api/v1/me/export', { cookie: quinn.cookie() })
  t.match(res.json().passkeys, [{ name: 'Phone', userId: quinn.id }])
})

t.test("removing a passkey ends the account's other sessions; a password reset keeps the passkeys", async (t) => {
  const frank = await member()
  t.equal((await frank.client.passkey.addPasskey({ name: 'Laptop' })).error, null)
  // Another browser signed in with that passkey (perhaps whoever took the authenticator).
  const other = browser()
  t.equal((await other.client.signIn.passkey()).error, null)
  t.equal((await other.client.getSession()).data?.user.id, frank.id)
  const [passkey] = (await frank.client.passkey.listUserPasskeys()).data!
  t.equal((await frank.client.passkey.deletePasskey({ id: passkey!.id })).error, null)
  t.equal((await other.client.getSession()).data, null, 'the other session ended')
  t.equal((await frank.client.getSession()).data?.user.id, frank.id, 'the one that removed it stays')
  const [removed] = await auditEvents(app.db, { action: 'auth.passkey.removed', targetId: frank.id })
  t.match(removed?.details, { sessionsEnded: 1 })

  // A reset proves the mailbox alone: it never removes a second factor (docs/http-contract.md,
  // "Recovery"), and the new password signs in only with the passkey.
  t.equal((await frank.client.passkey.addPasskey({ name: 'Laptop again' })).error, null)
  t.equal((await passkeyRows(frank.id)).length, 1)
  const token = await issueToken(app.db, 'reset-password', frank.id, { expiresAt: new Date(clock.now().getTime() + DAY) })
  const reset = await call(app, 'POST', '/api/auth/reset-password', { body: { token, newPassword: 'a brand new passphrase' } })
  t.equal(reset.statusCode, 200, reset.body)
  t.equal((await passkeyRows(frank.id)).length, 1, 'the reset kept the passkey')
  const [event] = await auditEvents(app.db, { action: 'auth.password_reset', targetId: frank.id })
  t.notMatch(event?.details ?? {}, { takenBack: true }, 'a plain reset, not a take-back')
  const password = await call(app, 'POST', '/api/auth/sign-in/email', {
    body: { email: frank.email, password: 'a brand new passphrase' },
  })
  t.same(password.json(), { twoFactorRedirect: true, twoFactorMethods: ['passkey'] })
  t.equal((await browser().client.signIn.passkey()).error, null, 'the passkey signs in')
})
