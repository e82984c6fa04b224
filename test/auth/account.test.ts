// Change password, list and revoke sessions.
import t from 'tap'
import { buildTestApp, call, sessionCookieOf, signUp } from '../helpers/app.js'
import { auditEvents } from '../helpers/expect.js'

const app = await buildTestApp()
const PASSWORD = 'correct horse battery staple'
const NEW_PASSWORD = 'a new and better passphrase'

const signIn = (email: string, password: string) => call(app, 'POST', '/api/auth/sign-in/email', { body: { email, password } })
const whoami = (cookie: string) => call(app, 'GET', '/api/v1/whoami', { cookie })
const listSessions = (cookie: string) => call(app, 'GET', '/api/auth/list-sessions', { cookie })
async function twoSessions() {
  const user = await signUp(app, { password: PASSWORD })
  const other = sessionCookieOf(await signIn(user.email, PASSWORD))!
  return { ...user, other }
}

t.test('change password: the current session stays, every other ends, the new password works', async (t) => {
  const user = await twoSessions()
  const res = await call(app, 'POST', '/api/auth/change-password', {
    cookie: user.cookie,
    body: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD },
  })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { token: null, user: { id: user.id, email: user.email } })
  t.equal((await whoami(user.cookie)).statusCode, 200, 'this session stays')
  t.equal((await whoami(user.other)).statusCode, 401, 'the other session ended')
  t.equal((await signIn(user.email, PASSWORD)).statusCode, 401)
  t.equal((await signIn(user.email, NEW_PASSWORD)).statusCode, 200)
  const audit = await auditEvents(app.db, { action: 'auth.password_changed', targetId: user.id })
  t.equal(audit.length, 1)
  t.match(audit[0]!.details, { otherSessionsEnded: 1 })
})

t.test('change password with a wrong current password is 401 INVALID_PASSWORD and changes nothing', async (t) => {
  const user = await twoSessions()
  const res = await call(app, 'POST', '/api/auth/change-password', {
    cookie: user.cookie,
    body: { currentPassword: 'not it at all', newPassword: NEW_PASSWORD },
  })
  t.equal(res.statusCode, 401)
  t.match(res.json(), { code: 'INVALID_PASSWORD', status: 401 })
  t.equal((await whoami(user.other)).statusCode, 200, 'no session ended')
  t.equal((await signIn(user.email, PASSWORD)).statusCode, 200)
})

t.test('change password: revokeOtherSessions is accepted, validation and session are enforced', async (t) => {
  const user = await twoSessions()
  const ok = await call(app, 'POST', '/api/auth/change-password', {
    cookie: user.cookie,
    body: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD, revokeOtherSessions: true },
  })
  t.equal(ok.statusCode, 200)
  t.equal(
    (await call(app, 'POST', '/api/auth/change-password', { body: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD } }))
      .statusCode,
    401,
    'no session',
  )
  for (const body of [
    { currentPassword: NEW_PASSWORD, newPassword: 'short' },
    { currentPassword: NEW_PASSWORD, newPassword: 'x'.repeat(129) },
    { currentPassword: NEW_PASSWORD, newPassword: 'long enough pass', role: 'owner' },
  ]) {
    const res = await call(app, 'POST', '/api/auth/change-password', { cookie: user.cookie, body })
    t.equal(res.statusCode, 400)
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }
})

t.test('an account without a password cannot change it (it uses reset)', async (t) => {
  const user = await signUp(app)
  await app.db.deleteFrom('account').where('user_id', '=', user.id).execute()
  const res = await call(app, 'POST', '/api/auth/change-password', {
    cookie: user.cookie,
    body: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD },
  })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { code: 'BAD_REQUEST' })
})

t.test('list-sessions shows public ids only and marks the current one', async (t) => {
  const user = await twoSessions()
  const res = await listSessions(user.cookie)
  t.equal(res.statusCode, 200)
  t.equal(res.headers['cache-control'], 'no-store')
  const sessions = res.json() as Array<Record<string, unknown>>
  t.equal(sessions.length, 2)
  t.same(sessions.map((s) => s.current).sort(), [false, true])
  const rows = await app.db.selectFrom('session').select(['id', 'token_hash']).where('user_id', '=', user.id).execute()
  for (const s of sessions) {
    t.same(Object.keys(s).sort(), [
      'createdAt',
      'current',
      'expiresAt',
      'id',
      'impersonatedBy',
      'ipAddress',
      'updatedAt',
      'userAgent',
      'userId',
    ])
    t.ok(rows.some((r) => r.id === s.id))
    t.notOk(JSON.stringify(s).includes(rows[0]!.token_hash) || JSON.stringify(s).includes(rows[1]!.token_hash), 'never the hash')
  }
  t.equal((await call(app, 'GET', '/api/auth/list-sessions')).statusCode, 401)
})

t.test('revoke-session ends one session of the current user', async (t) => {
  const user = await twoSessions()
  const other = (await listSessions(user.cookie)).json().find((s: { current: boolean }) => !s.current)
  const res = await call(app, 'POST', '/api/auth/revoke-session', { cookie: user.cookie, body: { id: other.id } })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { status: true })
  t.equal((await whoami(user.other)).statusCode, 401)
  t.equal((await whoami(user.cookie)).statusCode, 200)
  t.equal((await listSessions(user.cookie)).json().length, 1)
})

t.test('revoking the current session signs this browser out', async (t) => {
  const user = await signUp(app)
  const current = (await listSessions(user.cookie)).json()[0]
  const res = await call(app, 'POST', '/api/auth/revoke-session', { cookie: user.cookie, body: { id: current.id } })
  t.equal(res.statusCode, 200)
  t.match(String(res.headers['set-cookie']), /session_token=;/)
  t.equal((await whoami(user.cookie)).statusCode, 401)
})

t.test("another user's session id is 404 and revokes nothing", async (t) => {
  const alice = await signUp(app)
  const bob = await signUp(app)
  const bobSession = (await listSessions(bob.cookie)).json()[0]
  const res = await call(app, 'POST', '/api/auth/revoke-session', { cookie: alice.cookie, body: { id: bobSession.id } })
  t.equal(res.statusCode, 404)
  t.match(res.json(), { code: 'NOT_FOUND' })
  t.equal((await whoami(bob.cookie)).statusCode, 200, 'bob is still signed in')
  const unknown = await call(app, 'POST', '/api/auth/revoke-session', { cookie: alice.cookie, body: { id: 'no-such-session' } })
  t.equal(unknown.statusCode, 404, 'the same answer as an unknown id')
  t.equal(unknown.body.replace(/"message":"[^"]*"/, ''), res.body.replace(/"message":"[^"]*"/, ''))
})

t.test('revoke-session without a session, with a bad body', async (t) => {
  const user = await signUp(app)
  t.equal((await call(app, 'POST', '/api/auth/revoke-session', { body: { id: 'x' } })).statusCode, 401)
  for (const body of [{}, { id: '' }, { id: 'x', userId: user.id }, { token: 'x' }]) {
    const res = await call(app, 'POST', '/api/auth/revoke-session', { cookie: user.cookie, body })
    t.equal(res.statusCode, 400, JSON.stringify(body))
  }
})

t.test('revoke-other-sessions keeps only the current session', async (t) => {
  const user = await twoSessions()
  const third = sessionCookieOf(await signIn(user.email, PASSWORD))!
  const res = await call(app, 'POST', '/api/auth/revoke-other-sessions', { cookie: user.cookie, body: {} })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { status: true })
  t.equal((await whoami(user.other)).statusCode, 401)
  t.equal((await whoami(third)).statusCode, 401)
  t.equal((await whoami(user.cookie)).statusCode, 200)
  t.equal((await call(app, 'POST', '/api/auth/revoke-other-sessions', { body: {} })).statusCode, 401)
})
