// Suspension: POST /api/v1/admin/users/{id}/ban and /unban, and what a ban does to every way in:
// the sessions end at once, sign-in by email and by the identity provider is refused and creates
// nothing, a session that exists anyway is refused, and an expired ban no longer applies.
import t from 'tap'
import {
  buildTestApp,
  call,
  movableClock,
  sessionCookieOf,
  signUp,
  signUpWithRole,
  uniqueEmail,
  type TestUser,
} from '../helpers/app.js'
import { credentialEpoch } from '../helpers/expect.js'
import { Browser, drive, providerForApi } from '../helpers/idp.js'

const { apiPort, API, idp, env: idpEnv } = await providerForApi()
const clock = movableClock()
const HOUR = 60 * 60 * 1000
const app = await buildTestApp({
  env: idpEnv,
  deps: { clock },
})
await app.listen({ port: apiPort, host: '127.0.0.1' })

const admin = await signUpWithRole(app, 'admin')
const owner = await signUpWithRole(app, 'owner')
const member = await signUp(app)

/** As `who` (the admin unless told; null: without a session). */
const ban = (id: string, body: unknown, who: TestUser | null = admin) =>
  call(app, 'POST', `/api/v1/admin/users/${encodeURIComponent(id)}/ban`, { cookie: who?.cookie, body })
const unban = (id: string, body: unknown = {}, who: TestUser | null = admin) =>
  call(app, 'POST', `/api/v1/admin/users/${encodeURIComponent(id)}/unban`, { cookie: who?.cookie, body })
const signIn = (user: Pick<TestUser, 'email' | 'password'>, password = user.password) =>
  call(app, 'POST', '/api/auth/sign-in/email', { body: { email: user.email, password } })
const whoami = (cookie: string) => call(app, 'GET', '/api/v1/whoami', { cookie })

const userRow = (id: string) =>
  app.db
    .selectFrom('user')
    .select(['banned', 'ban_reason', 'ban_expires', 'updated_at'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow()
const sessionCount = async (userId: string) =>
  (await app.db.selectFrom('session').select('id').where('user_id', '=', userId).execute()).length
const auditOf = (targetId: string, action: string) =>
  app.db
    .selectFrom('audit_event')
    .selectAll()
    .where('target_id', '=', targetId)
    .where('action', '=', action)
    .orderBy('at')
    .execute()

const BANNED_MESSAGE = 'You have been banned from this application. Please contact support if you believe this is an error.'
const in1h = () => new Date(clock.now().getTime() + HOUR).toISOString()

t.test('ban: the admin user JSON, every session ended at once, audited', async (t) => {
  const target = await signUp(app)
  const second = sessionCookieOf(await signIn(target))!
  t.equal(await sessionCount(target.id), 2)
  const expiresAt = in1h()

  const res = await ban(target.id, { reason: '  Spam in the journal  ', expiresAt })
  t.equal(res.statusCode, 200)
  t.match(res.json(), {
    id: target.id,
    email: target.email,
    role: 'member',
    banned: true,
    banReason: 'Spam in the journal',
    banExpiresAt: new Date(expiresAt).toISOString(),
    counts: { sessions: 0 },
  })
  t.equal(await sessionCount(target.id), 0, 'no session survives')
  for (const cookie of [target.cookie, second]) {
    t.equal((await whoami(cookie)).statusCode, 401, 'the next request with an old session is 401')
  }
  t.equal((await call(app, 'GET', '/api/auth/get-session', { cookie: target.cookie })).json(), null)

  const [event, ...more] = await auditOf(target.id, 'admin.user.banned')
  t.equal(more.length, 0)
  t.match(event, {
    actor_id: admin.id,
    target_type: 'user',
    details: {
      before: { banned: false, banReason: null, banExpiresAt: null },
      after: { banned: true, banReason: 'Spam in the journal', banExpiresAt: new Date(expiresAt).toISOString() },
      sessionsRevoked: 2,
    },
  })

  // The listing and the moderation read show the suspension too.
  const listed = await call(app, 'GET', `/api/v1/admin/users?email=${encodeURIComponent(target.email)}`, { cookie: admin.cookie })
  t.match(listed.json().items, [{ id: target.id, banned: true, banReason: 'Spam in the journal' }])
  const one = await call(app, 'GET', `/api/v1/admin/users/${target.id}`, { cookie: admin.cookie })
  t.match(one.json(), { banned: true, banExpiresAt: new Date(expiresAt).toISOString() })
  t.match(
    listed.json().items.find((u: { id: string }) => u.id === target.id),
    { banned: true },
  )
  const other = await call(app, 'GET', `/api/v1/admin/users/${member.id}`, { cookie: admin.cookie })
  t.match(other.json(), { banned: false, banReason: null, banExpiresAt: null })
})

t.test('a banned user cannot sign in by email, and nothing is created', async (t) => {
  const target = await signUp(app)
  t.equal((await ban(target.id, { reason: 'Abuse' })).statusCode, 200)
  const auditBefore = (await auditOf(target.id, 'auth.sign_in')).length

  const refused = await signIn(target)
  t.equal(refused.statusCode, 403)
  t.same(refused.json(), { code: 'BANNED_USER', status: 403, message: BANNED_MESSAGE, defined: false })
  t.equal(sessionCookieOf(refused), undefined, 'no cookie')
  t.equal(await sessionCount(target.id), 0, 'no session')
  t.equal((await auditOf(target.id, 'auth.sign_in')).length, auditBefore)
  t.match(await auditOf(target.id, 'auth.sign_in_failed'), [{ details: { reason: 'banned' } }])

  // Only someone who knows the password learns of the ban.
  const wrong = await signIn(target, 'not the right password at all')
  t.same([wrong.statusCode, wrong.json().code], [401, 'INVALID_EMAIL_OR_PASSWORD'])
})

t.test('a session of a banned user is refused even if one exists', async (t) => {
  const target = await signUp(app)
  t.equal((await whoami(target.cookie)).statusCode, 200)
  // A ban written by an operator's SQL ends no session by itself: the session lookup refuses it.
  await app.db.updateTable('user').set({ banned: true, ban_reason: 'by hand' }).where('id', '=', target.id).execute()
  t.equal((await whoami(target.cookie)).statusCode, 401)
  t.equal(await sessionCount(target.id), 0, 'and ends it')

  // No session is ever created for a user whose ban holds, whatever the path.
  const epoch = await credentialEpoch(app.db, target.id)
  const options = { rememberMe: true, ipAddress: null, userAgent: null }
  await t.rejects(app.sessions.create({ userId: target.id, epoch }, options), { code: 'BANNED_USER' })
  t.equal(await sessionCount(target.id), 0)
})

t.test('identity provider sign-in of a banned user goes to the error URL and creates nothing', async (t) => {
  const errorUrl = 'http://localhost:3000/auth/error'
  // A user already linked to the provider.
  const sub = `ban-sub-${process.pid}`
  const email = uniqueEmail('idp-banned')
  idp.accounts.set(sub, { email, email_verified: true, name: 'Linked' })
  const first = await drive(new Browser(), `${API}/api/auth/sign-in/idp`, { api: API, provider: idp.issuer, login: sub })
  t.equal(first.landed.origin, 'http://localhost:3000')
  const linked = await app.db.selectFrom('user').select('id').where('email', '=', email).executeTakeFirstOrThrow()
  t.equal(await sessionCount(linked.id), 1)
  t.equal((await ban(linked.id, { reason: 'Fraud' })).statusCode, 200)
  t.equal(await sessionCount(linked.id), 0)

  const browser = new Browser()
  const again = await drive(browser, `${API}/api/auth/sign-in/idp`, { api: API, provider: idp.issuer, login: sub })
  t.equal(`${again.landed.origin}${again.landed.pathname}`, errorUrl)
  t.equal(again.landed.searchParams.get('error'), 'BANNED_USER')
  t.equal(browser.cookie(API, 'better-auth.session_token'), undefined)
  t.equal(await sessionCount(linked.id), 0, 'no session')

  // A banned user with a password, met by email for the first time: not linked either.
  const withPassword = await signUp(app)
  t.equal((await ban(withPassword.id, { reason: 'Fraud' })).statusCode, 200)
  const newSub = `ban-sub-new-${process.pid}`
  idp.accounts.set(newSub, { email: withPassword.email, email_verified: true })
  const linkTry = await drive(new Browser(), `${API}/api/auth/sign-in/idp`, { api: API, provider: idp.issuer, login: newSub })
  t.equal(linkTry.landed.searchParams.get('error'), 'BANNED_USER')
  const accounts = await app.db.selectFrom('account').select('provider_id').where('user_id', '=', withPassword.id).execute()
  t.same(
    accounts.map((a) => a.provider_id),
    ['credential'],
    'no identity linked',
  )
  t.equal(await sessionCount(withPassword.id), 0)
  t.match(await app.db.selectFrom('audit_event').selectAll().where('action', '=', 'auth.idp.sign_in_failed').execute(), [
    { details: { error: 'BANNED_USER' } },
    { details: { error: 'BANNED_USER' } },
  ])
})

t.test('an expired ban no longer applies: it is lifted at the next sign-in', async (t) => {
  const target = await signUp(app)
  t.equal((await ban(target.id, { reason: 'Cooling off', expiresAt: in1h() })).statusCode, 200)
  t.equal((await signIn(target)).statusCode, 403)

  clock.set(2 * HOUR)
  const res = await signIn(target)
  t.equal(res.statusCode, 200)
  t.ok(sessionCookieOf(res))
  t.match(await userRow(target.id), { banned: false, ban_reason: null, ban_expires: null })
  t.match(await auditOf(target.id, 'admin.user.unbanned'), [
    { actor_id: null, details: { via: 'expired', before: { banned: true, banReason: 'Cooling off' }, after: { banned: false } } },
  ])
  const listed = await call(app, 'GET', `/api/v1/admin/users/${target.id}`, { cookie: admin.cookie })
  t.match(listed.json(), { banned: false, banReason: null, banExpiresAt: null })
})

t.test('a session of a user whose ban expired is not refused', async (t) => {
  const target = await signUp(app)
  const past = new Date(Date.now() - HOUR)
  await app.db
    .updateTable('user')
    .set({ banned: true, ban_reason: 'old', ban_expires: past })
    .where('id', '=', target.id)
    .execute()
  t.equal((await whoami(target.cookie)).statusCode, 200)
})

t.test('unban: the user signs in again; audited, idempotent', async (t) => {
  const target = await signUp(app)
  t.equal((await ban(target.id, { reason: 'Mistake' })).statusCode, 200)
  t.equal((await signIn(target)).statusCode, 403)

  const res = await unban(target.id)
  t.equal(res.statusCode, 200)
  t.match(res.json(), { id: target.id, banned: false, banReason: null, banExpiresAt: null })
  t.equal((await signIn(target)).statusCode, 200)

  const again = await unban(target.id, undefined)
  t.equal(again.statusCode, 200, 'no body is an empty body')
  t.equal(again.json().banned, false)
  const events = await auditOf(target.id, 'admin.user.unbanned')
  t.equal(events.length, 2)
  t.match(events[0], {
    actor_id: admin.id,
    details: { via: 'admin', before: { banned: true, banReason: 'Mistake' }, after: { banned: false, banReason: null } },
  })
})

t.test('an owner, or oneself, cannot be banned; an admin can be', async (t) => {
  const otherAdmin = await signUpWithRole(app, 'admin')
  for (const [label, id, who] of [
    ['owner by admin', owner.id, admin],
    ['self as admin', admin.id, admin],
    ['self as owner', owner.id, owner],
  ] as const) {
    const res = await ban(id, { reason: 'no' }, who)
    t.same([res.statusCode, res.json().code, res.json().defined], [403, 'FORBIDDEN', false], label)
    t.match(await userRow(id), { banned: false }, label)
    t.equal((await auditOf(id, 'admin.user.banned')).length, 0, label)
  }
  t.equal((await whoami(admin.cookie)).statusCode, 200, 'the refused act ended no session')
  t.equal((await whoami(owner.cookie)).statusCode, 200)

  const res = await ban(otherAdmin.id, { reason: 'Rogue admin' }, owner)
  t.equal(res.statusCode, 200)
  t.equal((await call(app, 'GET', '/api/v1/admin/users', { cookie: otherAdmin.cookie })).statusCode, 401)
})

t.test('only admins: no session 401, a member 403, nothing written', async (t) => {
  const target = await signUp(app)
  const anonymous = await ban(target.id, { reason: 'x' }, null)
  t.same([anonymous.statusCode, anonymous.json().code], [401, 'UNAUTHORIZED'])
  const anonymousUnban = await unban(target.id, {}, null)
  t.same([anonymousUnban.statusCode, anonymousUnban.json().code], [401, 'UNAUTHORIZED'])
  for (const res of [await ban(target.id, { reason: 'x' }, member), await unban(target.id, {}, member)]) {
    t.same([res.statusCode, res.json().code], [403, 'FORBIDDEN'])
  }
  // A member who bans themselves gets the same 403, not the self rule.
  t.equal((await ban(member.id, { reason: 'x' }, member)).statusCode, 403)
  t.match(await userRow(target.id), { banned: false })
  t.equal(await sessionCount(target.id), 1)
  t.equal((await auditOf(target.id, 'admin.user.banned')).length, 0)
})

t.test('unknown id: 404 for ban and unban', async (t) => {
  for (const res of [await ban('no-such-user', { reason: 'x' }), await unban('no-such-user')]) {
    t.same([res.statusCode, res.json().code], [404, 'NOT_FOUND'])
  }
  const tooLong = await ban('x'.repeat(201), { reason: 'x' })
  t.same([tooLong.statusCode, tooLong.json().code], [400, 'BAD_REQUEST'], 'an over-long id never reaches the database')
})

t.test('bad input is 400 and bans nobody', async (t) => {
  const target = await signUp(app)
  const before = await userRow(target.id)
  const cases: Array<[string, unknown]> = [
    ['no body', undefined],
    ['no reason', {}],
    ['empty reason', { reason: '   ' }],
    ['reason too long', { reason: 'x'.repeat(501) }],
    ['reason not a string', { reason: 42 }],
    ['expiry not an instant', { reason: 'x', expiresAt: 'tomorrow' }],
    ['expiry in the past', { reason: 'x', expiresAt: new Date(Date.now() - 1000).toISOString() }],
    ['unknown key', { reason: 'x', banned: false }],
    ['mass assignment', { reason: 'x', role: 'owner' }],
  ]
  for (const [label, body] of cases) {
    const res = await ban(target.id, body)
    t.same([res.statusCode, res.json().code, res.json().defined], [400, 'VALIDATION_ERROR', false], label)
  }
  const unbanUnknown = await unban(target.id, { reason: 'x' })
  t.same([unbanUnknown.statusCode, unbanUnknown.json().code], [400, 'VALIDATION_ERROR'], 'unban takes no keys')
  const huge = await ban(target.id, { reason: 'x'.repeat(70 * 1024) })
  t.same([huge.statusCode, huge.json().code], [413, 'PAYLOAD_TOO_LARGE'])
  const notJson = await call(app, 'POST', `/api/v1/admin/users/${target.id}/ban`, {
    cookie: admin.cookie,
    body: 'reason=x',
    headers: { 'content-type': 'text/plain' },
  })
  t.same([notJson.statusCode, notJson.json().code], [415, 'UNSUPPORTED_MEDIA_TYPE'])

  t.same(await userRow(target.id), before, 'the user row is untouched')
  t.equal(await sessionCount(target.id), 1)
  t.equal((await auditOf(target.id, 'admin.user.banned')).length, 0)
})
