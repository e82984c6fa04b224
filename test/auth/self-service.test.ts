// Self-service at parity with better-auth 1.6.34, driven by better-auth's own client over a real
// socket with a cookie jar: update-user, list-accounts, unlink-account, revoke-sessions,
// delete-user (password, or a mailed link), the reset link GET /reset-password/:token, /ok, /error.
import t from 'tap'
import { redactUrl } from '../../src/plugins/logging.js'
import { newId } from '../../src/shared/ids.js'
import { call, sessionCookieOf, signUp, signUpWithRole, type TestUser, WEB_ORIGIN } from '../helpers/app.js'
import { HOSTILE, label } from '../helpers/redirects.js'
import { authClient } from '../helpers/auth-client.js'
import { linkIn, mailingApp } from '../helpers/smtp.js'

const { smtp, clock, app } = await mailingApp()
const HOUR = 3600_000

/** A browser with better-auth's client, signed up as a new member. */
async function signedUpClient(name = 'Self Service') {
  const browser = authClient(app)
  const email = `self-${newId()}@example.com`.toLowerCase()
  const password = 'correct horse battery staple'
  const res = await browser.client.signUp.email({ name, email, password })
  if (res.error) throw new Error(JSON.stringify(res.error))
  return { ...browser, email, password, id: res.data!.user.id }
}

const userRow = (id: string) => app.db.selectFrom('user').selectAll().where('id', '=', id).executeTakeFirst()
const accountRows = (userId: string) =>
  app.db.selectFrom('account').selectAll().where('user_id', '=', userId).orderBy('created_at').execute()
const sessionCount = async (userId: string) =>
  (await app.db.selectFrom('session').select('id').where('user_id', '=', userId).execute()).length
const auditActions = async (userId: string) =>
  (await app.db.selectFrom('audit_event').select('action').where('target_id', '=', userId).execute()).map((r) => r.action)

/** Links the identity provider's subject `sub` to the user, as a finished sign-in or link-social would. */
async function linkIdp(userId: string, sub = `sub-${newId()}`) {
  await app.db
    .insertInto('account')
    .values({ id: newId(), user_id: userId, provider_id: 'idp', account_id: sub, password_hash: null })
    .execute()
  return sub
}

/** A user whose only way in is the identity provider (the password removed), with a session. */
async function userWithoutPassword(): Promise<TestUser> {
  const user = await signUp(app)
  await linkIdp(user.id)
  await app.db.deleteFrom('account').where('user_id', '=', user.id).where('provider_id', '=', 'credential').execute()
  return user
}

t.test('update-user changes name and image through the client, and nothing else', async (t) => {
  const me = await signedUpClient()
  const done = await me.client.updateUser({ name: 'Renamed', image: 'https://cdn.example.com/me.png' })
  t.equal(done.error, null, JSON.stringify(done.error))
  t.same(done.data, { status: true })
  const session = await me.client.getSession()
  t.equal(session.data?.user.name, 'Renamed', 'the session reads the change at once (cache invalidated)')
  t.equal(session.data?.user.image, 'https://cdn.example.com/me.png')
  t.ok((await auditActions(me.id)).includes('profile.updated'), 'audited as a profile update')

  const before = await userRow(me.id)
  const email = await me.client.updateUser({ email: 'taken@example.com' } as never)
  t.same([email.error?.status, email.error?.code], [400, 'EMAIL_CAN_NOT_BE_UPDATED'])
  for (const body of [
    { role: 'admin' },
    { plan: 'premium' },
    { name: 'X', emailVerified: true },
    { name: 'x'.repeat(101) },
    { image: 'http://cdn.example.com/a.png' },
    { name: '' },
    // A lone surrogate cannot be stored: refused, never silently rewritten to U+FFFD.
    { name: 'A\ud800B' },
    { name: 'A\udc00' },
  ]) {
    const res = await me.client.updateUser(body as never)
    t.same([res.error?.status, res.error?.code], [400, 'VALIDATION_ERROR'], JSON.stringify(body).slice(0, 60))
  }
  // The client sends an empty update as a GET; a browser posting {} gets better-auth's answer.
  const empty = await call(app, 'POST', '/api/auth/update-user', { cookie: me.cookie(), body: {} })
  t.same([empty.statusCode, empty.json().code], [400, 'BAD_REQUEST'], 'no fields to update')
  t.same(await userRow(me.id), before, 'nothing was written by a refused update')

  const big = await call(app, 'POST', '/api/auth/update-user', { cookie: me.cookie(), body: { name: 'y'.repeat(70_000) } })
  t.equal(big.statusCode, 413)
  const anonymous = await call(app, 'POST', '/api/auth/update-user', { body: { name: 'Nobody' } })
  t.same([anonymous.statusCode, anonymous.json().code], [401, 'UNAUTHORIZED'])
})

t.test('list-accounts shows the ways in, never a hash or a token', async (t) => {
  const me = await signedUpClient()
  const listed = await me.client.listAccounts()
  t.equal(listed.error, null)
  t.equal(listed.data?.length, 1)
  t.match(listed.data?.[0], { providerId: 'credential', accountId: me.id, userId: me.id, scopes: [] })
  const sub = await linkIdp(me.id)
  const raw = await call(app, 'GET', '/api/auth/list-accounts', { cookie: me.cookie() })
  t.equal(raw.statusCode, 200)
  t.same(
    raw.json().map((a: { providerId: string; accountId: string }) => [a.providerId, a.accountId]),
    [
      ['credential', me.id],
      ['idp', sub],
    ],
  )
  t.same(Object.keys(raw.json()[0]).sort(), ['accountId', 'createdAt', 'id', 'providerId', 'scopes', 'updatedAt', 'userId'])
  t.notMatch(raw.body, /argon2|password/i, 'no hash in the answer')
  const anonymous = await call(app, 'GET', '/api/auth/list-accounts')
  t.same([anonymous.statusCode, anonymous.json().code], [401, 'UNAUTHORIZED'])
})

t.test("unlink-account removes one way in, never the last, never someone else's", async (t) => {
  const me = await signedUpClient()
  const last = await me.client.unlinkAccount({ providerId: 'credential' })
  t.same([last.error?.status, last.error?.code], [400, 'FAILED_TO_UNLINK_LAST_ACCOUNT'])

  const other = await signUp(app)
  const theirSub = await linkIdp(other.id)
  const mySub = await linkIdp(me.id)
  const theirs = await me.client.unlinkAccount({ providerId: 'idp', accountId: theirSub })
  t.same([theirs.error?.status, theirs.error?.code], [400, 'ACCOUNT_NOT_FOUND'], "someone else's account is not found")
  t.equal((await accountRows(other.id)).length, 2, 'their accounts are untouched')
  const unknownProvider = await me.client.unlinkAccount({ providerId: 'github' })
  t.same([unknownProvider.error?.status, unknownProvider.error?.code], [400, 'ACCOUNT_NOT_FOUND'])
  for (const body of [{ providerId: 'idp', userId: other.id }, { providerId: '' }, { providerId: 'x'.repeat(65) }, {}]) {
    const res = await call(app, 'POST', '/api/auth/unlink-account', { cookie: me.cookie(), body })
    t.same([res.statusCode, res.json().code], [400, 'VALIDATION_ERROR'], JSON.stringify(body).slice(0, 50))
  }

  const password = await me.client.unlinkAccount({ providerId: 'credential' })
  t.same(password.data, { status: true }, 'the password goes while the identity provider remains')
  t.same(
    (await accountRows(me.id)).map((a) => [a.provider_id, a.account_id]),
    [['idp', mySub]],
  )
  const signIn = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: me.email, password: me.password } })
  t.equal(signIn.statusCode, 401, 'the password no longer signs in')
  t.ok((await auditActions(me.id)).includes('auth.account_unlinked'))
  const idp = await me.client.unlinkAccount({ providerId: 'idp', accountId: mySub })
  t.same([idp.error?.status, idp.error?.code], [400, 'FAILED_TO_UNLINK_LAST_ACCOUNT'])
  t.equal((await accountRows(me.id)).length, 1)
  t.same([(await call(app, 'POST', '/api/auth/unlink-account', { body: { providerId: 'idp' } })).statusCode], [401])
})

t.test('a credential account without a password does not count as a way in', async (t) => {
  const me = await signedUpClient()
  const sub = await linkIdp(me.id)
  await app.db
    .updateTable('account')
    .set({ password_hash: null })
    .where('user_id', '=', me.id)
    .where('provider_id', '=', 'credential')
    .execute()
  const res = await me.client.unlinkAccount({ providerId: 'idp', accountId: sub })
  t.same([res.error?.status, res.error?.code], [400, 'FAILED_TO_UNLINK_LAST_ACCOUNT'])
  t.equal((await accountRows(me.id)).length, 2)
})

t.test('revoke-sessions ends every session of the user, this one included', async (t) => {
  const me = await signedUpClient()
  const elsewhere = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: me.email, password: me.password } })
  const otherCookie = sessionCookieOf(elsewhere)!
  const bystander = await signUp(app)
  t.equal(await sessionCount(me.id), 2)
  const res = await me.client.revokeSessions()
  t.equal(res.error, null)
  t.same(res.data, { status: true })
  t.equal(await sessionCount(me.id), 0)
  t.notOk(me.jar.has('better-auth.session_token'), 'the cookie is cleared')
  t.equal((await me.client.getSession()).data, null)
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: otherCookie })).statusCode, 401, 'the other session ended too')
  t.equal(
    (await call(app, 'GET', '/api/v1/whoami', { cookie: bystander.cookie })).statusCode,
    200,
    "another user's session stays",
  )
  t.ok((await auditActions(me.id)).includes('auth.all_sessions_revoked'))
  const again = await me.client.revokeSessions()
  t.equal(again.error?.status, 401, 'no session: 401')
  const unknown = await call(app, 'POST', '/api/auth/revoke-sessions', { cookie: bystander.cookie, body: { userId: me.id } })
  t.same([unknown.statusCode, unknown.json().code], [400, 'VALIDATION_ERROR'])
})

t.test('delete-user with the password erases the account as DELETE /api/v1/me does', async (t) => {
  const me = await signedUpClient()
  await call(app, 'POST', '/api/v1/consent', { cookie: me.cookie(), body: { type: 'terms', version: 'v1', granted: true } })
  const wrong = await me.client.deleteUser({ password: 'not the password' })
  t.same([wrong.error?.status, wrong.error?.code], [400, 'INVALID_PASSWORD'])
  const missing = await me.client.deleteUser({})
  t.same([missing.error?.status, missing.error?.code], [400, 'INVALID_PASSWORD'], 'an account with a password must give it')
  for (const body of [{ password: me.password, userId: 'x' }, { password: '' }, { password: 'p'.repeat(1025) }]) {
    const res = await call(app, 'POST', '/api/auth/delete-user', { cookie: me.cookie(), body })
    t.same([res.statusCode, res.json().code], [400, 'VALIDATION_ERROR'], JSON.stringify(body).slice(0, 40))
  }
  t.ok(await userRow(me.id), 'still there after the refusals')
  t.ok((await auditActions(me.id)).includes('account.delete_refused'))

  const done = await me.client.deleteUser({ password: me.password })
  t.equal(done.error, null, JSON.stringify(done.error))
  t.same(done.data, { success: true, message: 'User deleted' })
  t.equal(await userRow(me.id), undefined, 'the user is gone')
  t.equal((await accountRows(me.id)).length, 0)
  t.equal(await sessionCount(me.id), 0)
  t.notOk(me.jar.has('better-auth.session_token'), 'the cookie is cleared')
  const consents = await app.db.selectFrom('consent_record').select(['user_id', 'ip']).where('version', '=', 'v1').execute()
  t.notOk(
    consents.some((c) => c.user_id === me.id),
    'kept records no longer point to the person',
  )
  const deleted = await app.db
    .selectFrom('audit_event')
    .selectAll()
    .where('action', '=', 'account.deleted')
    .where('target_id', '=', me.id)
    .execute()
  t.equal(deleted.length, 1, 'the one audited deletion')
  t.equal(deleted[0]!.ip, null)
  t.equal((await me.client.getSession()).data, null)
})

t.test('delete-user: no session, an owner, a password for an account that has none', async (t) => {
  const anonymous = await call(app, 'POST', '/api/auth/delete-user', { body: { password: 'whatever password' } })
  t.same([anonymous.statusCode, anonymous.json().code], [401, 'UNAUTHORIZED'])
  const owner = await signUpWithRole(app, 'owner')
  const refused = await call(app, 'POST', '/api/auth/delete-user', { cookie: owner.cookie, body: { password: owner.password } })
  t.same([refused.statusCode, refused.json().code], [403, 'FORBIDDEN'])
  t.ok(await userRow(owner.id))
  const noPassword = await userWithoutPassword()
  const res = await call(app, 'POST', '/api/auth/delete-user', {
    cookie: noPassword.cookie,
    body: { password: 'a guess at one' },
  })
  t.same([res.statusCode, res.json().code], [400, 'CREDENTIAL_ACCOUNT_NOT_FOUND'])
  t.ok(await userRow(noPassword.id))
})

t.test('wrong passwords at delete-user count against the account like sign-in', async (t) => {
  const user = await signUp(app)
  const statuses: number[] = []
  for (let i = 0; i < 6; i++) {
    const res = await call(app, 'POST', '/api/auth/delete-user', { cookie: user.cookie, body: { password: `wrong guess ${i}` } })
    statuses.push(res.statusCode)
  }
  t.same(statuses, [400, 400, 400, 400, 400, 429])
  const right = await call(app, 'POST', '/api/auth/delete-user', { cookie: user.cookie, body: { password: user.password } })
  t.equal(right.statusCode, 429, 'even the right password waits')
  t.ok(await userRow(user.id))
})

t.test('an account without a password confirms its deletion through a mailed, single-use link', async (t) => {
  const user = await userWithoutPassword()
  const res = await call(app, 'POST', '/api/auth/delete-user', { cookie: user.cookie, body: { callbackURL: '/goodbye' } })
  t.same([res.statusCode, res.json()], [200, { success: true, message: 'Verification email sent' }])
  t.ok(await userRow(user.id), 'nothing deleted yet')
  const mail = await smtp.inbox.next(user.email)
  const link = linkIn(mail)
  t.equal(`${link.origin}${link.pathname}`, 'http://localhost:8787/api/auth/delete-user/callback')
  t.equal(link.searchParams.get('callbackURL'), `${WEB_ORIGIN}/goodbye`, 'the resolved URL')
  const open = (cookie?: string, url = `${link.pathname}${link.search}`) =>
    app.inject({ method: 'GET', url, headers: cookie ? { cookie } : {} })

  t.equal((await open()).statusCode, 401, 'needs its owner signed in')
  const stranger = await signUp(app)
  const strangers = await open(stranger.cookie)
  t.same(
    [strangers.statusCode, strangers.headers.location],
    [302, `${WEB_ORIGIN}/goodbye?error=INVALID_TOKEN`],
    "not another user's link",
  )
  const strangerJson = await open(stranger.cookie, `${link.pathname}?token=${link.searchParams.get('token')}`)
  t.same([strangerJson.statusCode, strangerJson.json().code], [404, 'INVALID_TOKEN'])
  t.ok(await userRow(stranger.id), 'the stranger is not deleted either')
  t.ok(await userRow(user.id))

  const done = await open(user.cookie)
  t.same([done.statusCode, done.headers.location], [302, `${WEB_ORIGIN}/goodbye`])
  t.match(String(done.headers['set-cookie']), /session_token=;/, 'the cookie is cleared')
  t.equal(await userRow(user.id), undefined)
  t.equal((await auditActions(user.id)).filter((a) => a === 'account.deleted').length, 1)
  const replay = await open(stranger.cookie)
  t.same([replay.statusCode, replay.headers.location], [302, `${WEB_ORIGIN}/goodbye?error=INVALID_TOKEN`], 'single use')
})

t.test('a deletion link expires after 24 hours; its token also works in the delete-user body', async (t) => {
  const user = await userWithoutPassword()
  await call(app, 'POST', '/api/auth/delete-user', { cookie: user.cookie, body: {} })
  const first = linkIn(await smtp.inbox.next(user.email))
  t.equal(first.searchParams.get('callbackURL'), `${WEB_ORIGIN}/`, 'the front end home by default')
  const token = first.searchParams.get('token')!
  clock.set(24 * HOUR + 60_000)
  // The 30-day session outlives the link.
  const expired = await call(app, 'POST', '/api/auth/delete-user', { cookie: user.cookie, body: { token } })
  t.same([expired.statusCode, expired.json().code], [404, 'INVALID_TOKEN'])
  t.ok(await userRow(user.id))
  clock.set(0)
  await call(app, 'POST', '/api/auth/delete-user', { cookie: user.cookie, body: {} })
  const second = linkIn(await smtp.inbox.next(user.email)).searchParams.get('token')!
  const bogus = await call(app, 'POST', '/api/auth/delete-user', { cookie: user.cookie, body: { token: 'not-a-token' } })
  t.same([bogus.statusCode, bogus.json().code], [404, 'INVALID_TOKEN'])
  const done = await call(app, 'POST', '/api/auth/delete-user', { cookie: user.cookie, body: { token: second } })
  t.same([done.statusCode, done.json()], [200, { success: true, message: 'User deleted' }])
  t.equal(await userRow(user.id), undefined)
})

t.test('GET /reset-password/:token hands a live token to the callback, else INVALID_TOKEN', async (t) => {
  const user = await signUp(app)
  await call(app, 'POST', '/api/auth/request-password-reset', { body: { email: user.email } })
  const token = linkIn(await smtp.inbox.next(user.email)).searchParams.get('token')!
  const get = (tok: string, query: string) => app.inject({ method: 'GET', url: `/api/auth/reset-password/${tok}${query}` })
  const live = await get(token, '?callbackURL=%2Freset%3Fstep%3D2')
  t.same([live.statusCode, live.headers.location], [302, `${WEB_ORIGIN}/reset?step=2&token=${token}`])
  const unknown = await get('nope', '?callbackURL=/reset')
  t.same([unknown.statusCode, unknown.headers.location], [302, `${WEB_ORIGIN}/reset?error=INVALID_TOKEN`])
  const untrusted = await get(token, `?callbackURL=${encodeURIComponent('https://evil.example/steal')}`)
  t.same([untrusted.statusCode, untrusted.json().code], [403, 'INVALID_CALLBACK_URL'])
  t.equal((await get(token, '')).statusCode, 400, 'callbackURL is required')
  t.equal((await get(token, '?callbackURL=/r&extra=1')).statusCode, 400, 'unknown query keys')
  t.equal((await get('t'.repeat(300), '?callbackURL=/r')).statusCode, 400, 'oversized token')
  clock.set(HOUR + 1000)
  const expired = await get(token, '?callbackURL=/reset')
  t.equal(expired.headers.location, `${WEB_ORIGIN}/reset?error=INVALID_TOKEN`, 'expired after one hour')
  clock.set(0)
  const reset = await call(app, 'POST', '/api/auth/reset-password', { body: { token, newPassword: 'a brand new passphrase' } })
  t.equal(reset.statusCode, 200, 'looking at the link did not spend the token')
  t.equal(
    redactUrl(`/api/auth/reset-password/${token}?callbackURL=/r`),
    '/api/auth/reset-password/[Redacted]?callbackURL=/r',
    'never logged',
  )
})

t.test('/ok and /error answer as better-auth does, publicly', async (t) => {
  const { port } = app.server.address() as { port: number }
  const ok = await fetch(`http://127.0.0.1:${port}/api/auth/ok`)
  t.same([ok.status, await ok.json()], [200, { ok: true }])
  const error = await app.inject({
    method: 'GET',
    url: '/api/auth/error?error=state_mismatch&error_description=%3Cscript%3Ealert(1)%3C%2Fscript%3E',
  })
  t.equal(error.statusCode, 302)
  const target = new URL(error.headers.location as string)
  t.equal(`${target.origin}${target.pathname}`, `${WEB_ORIGIN}/auth/error`)
  t.equal(target.searchParams.get('error'), 'state_mismatch')
  t.equal(target.searchParams.get('error_description'), '<script>alert(1)</script>', 'carried as data, percent-encoded')
  t.notMatch(error.headers.location as string, /</)
  const odd = await app.inject({ method: 'GET', url: '/api/auth/error?error=%3Cimg%20src%3Dx%3E' })
  t.equal(new URL(odd.headers.location as string).searchParams.get('error'), 'UNKNOWN')
  const none = await app.inject({ method: 'GET', url: '/api/auth/error' })
  t.equal(none.headers.location, `${WEB_ORIGIN}/auth/error?error=UNKNOWN`)
  const huge = await app.inject({ method: 'GET', url: `/api/auth/error?error_description=${'d'.repeat(1100)}` })
  t.same([huge.statusCode, huge.json().code], [400, 'VALIDATION_ERROR'])
})

t.test('every new callbackURL goes through the one redirect rule: hostile values are 403, nothing written', async (t) => {
  const user = await userWithoutPassword()
  const tokensBefore = (await app.db.selectFrom('verification').select('id').execute()).length
  for (const value of HOSTILE) {
    const cases = [
      await call(app, 'POST', '/api/auth/change-email', {
        cookie: user.cookie,
        body: { newEmail: `x-${newId()}@example.com`.toLowerCase(), callbackURL: value },
      }),
      await call(app, 'POST', '/api/auth/delete-user', { cookie: user.cookie, body: { callbackURL: value } }),
      await app.inject({
        method: 'GET',
        url: `/api/auth/delete-user/callback?token=x&callbackURL=${encodeURIComponent(value)}`,
        headers: { cookie: user.cookie },
      }),
      await app.inject({ method: 'GET', url: `/api/auth/reset-password/x?callbackURL=${encodeURIComponent(value)}` }),
    ]
    for (const res of cases) {
      t.same([res.statusCode, res.json().code], [403, 'INVALID_CALLBACK_URL'], label(value))
      t.notOk(res.headers.location, `${label(value)}: no Location`)
    }
  }
  await app.settled()
  t.equal((await app.db.selectFrom('verification').select('id').execute()).length, tokensBefore, 'no token was written')
  t.ok(await userRow(user.id))
})
