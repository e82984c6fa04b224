import t from 'tap'
import { recordAudit } from '../../src/shared/audit.js'
import { buildTestApp, call, signUp, signUpWithRole, type TestUser } from '../helpers/app.js'
import { auditEvents } from '../helpers/expect.js'

const app = await buildTestApp()
const admin = await signUpWithRole(app, 'admin')
const owner = await signUpWithRole(app, 'owner')

const roleOf = async (id: string) =>
  (await app.db.selectFrom('user').select('role').where('id', '=', id).executeTakeFirstOrThrow()).role
const whoami = (user: TestUser) => call(app, 'GET', '/api/v1/whoami', { cookie: user.cookie })
const auditOf = (targetId: string, action: string) => auditEvents(app.db, { action, targetId })

t.test('a promotion takes effect on the very next request of the target', async (t) => {
  const target = await signUp(app)
  t.equal((await call(app, 'GET', '/api/v1/admin/users', { cookie: target.cookie })).statusCode, 403)

  const res = await call(app, 'POST', `/api/v1/admin/users/${target.id}/make-admin`, { cookie: admin.cookie, body: {} })
  t.equal(res.statusCode, 200)
  t.equal(res.json().role, 'admin')

  // Same cookie, no new sign-in: the session is validated against the database every request.
  t.equal((await whoami(target)).json().role, 'admin')
  t.equal((await call(app, 'GET', '/api/v1/admin/users', { cookie: target.cookie })).statusCode, 200)

  const [event] = await auditOf(target.id, 'admin.user.role_changed')
  t.match(event, { actor_id: admin.id, target_type: 'user', details: { before: { role: 'member' }, after: { role: 'admin' } } })
})

t.test('make-admin is idempotent', async (t) => {
  const target = await signUp(app)
  for (let i = 0; i < 2; i++) {
    const res = await call(app, 'POST', `/api/v1/admin/users/${target.id}/make-admin`, { cookie: owner.cookie, body: {} })
    t.equal(res.statusCode, 200)
    t.equal(res.json().role, 'admin')
  }
  t.equal(await roleOf(target.id), 'admin')
  t.equal((await whoami(target)).statusCode, 200, 'promotion leaves the sessions alone')
  const events = await auditOf(target.id, 'admin.user.role_changed')
  t.equal(events.length, 2, 'each act is audited')
  t.same(events[1]!.details.before, { role: 'admin' })
  t.same(events[1]!.details.after, { role: 'admin' })
})

t.test('demoting an admin ends all their sessions and the next request is 401', async (t) => {
  const target = await signUpWithRole(app, 'admin')
  const second = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: target.email, password: target.password } })
  t.equal(second.statusCode, 200)
  t.equal((await whoami(target)).json().role, 'admin')

  const res = await call(app, 'POST', `/api/v1/admin/users/${target.id}/role`, { cookie: owner.cookie, body: { role: 'member' } })
  t.equal(res.statusCode, 200)
  t.equal(res.json().role, 'member')

  t.equal((await whoami(target)).statusCode, 401)
  t.equal((await call(app, 'GET', '/api/v1/admin/users', { cookie: target.cookie })).statusCode, 401)
  const left = await app.db.selectFrom('session').select('id').where('user_id', '=', target.id).execute()
  t.equal(left.length, 0)
  const [event] = await auditOf(target.id, 'admin.user.role_changed')
  t.match(event!.details, { before: { role: 'admin' }, after: { role: 'member' }, sessionsRevoked: 2 })

  // Signing in again gives a member session.
  const again = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: target.email, password: target.password } })
  t.equal(again.json().user.role, 'member')
})

t.test('nobody can change, re-plan or log out the owner through the API', async (t) => {
  const otherOwner = await signUpWithRole(app, 'owner')
  const before = await app.db.selectFrom('user').selectAll().where('id', '=', owner.id).executeTakeFirstOrThrow()
  const sessionsBefore = await app.db.selectFrom('session').select('id').where('user_id', '=', owner.id).execute()
  for (const actor of [admin, otherOwner]) {
    for (const [url, body] of [
      ['role', { role: 'member' }],
      ['role', { role: 'admin' }],
      ['make-admin', {}],
      ['plan', { plan: 'free' }],
      ['premium-plus', {}],
      ['revoke-sessions', {}],
    ] as const) {
      const res = await call(app, 'POST', `/api/v1/admin/users/${owner.id}/${url}`, { cookie: actor.cookie, body })
      t.equal(res.statusCode, 403, `${url} ${JSON.stringify(body)}`)
      t.equal(res.json().code, 'FORBIDDEN')
    }
  }
  const after = await app.db.selectFrom('user').selectAll().where('id', '=', owner.id).executeTakeFirstOrThrow()
  t.same(after, before, 'the owner row is untouched')
  t.equal(
    (await app.db.selectFrom('session').select('id').where('user_id', '=', owner.id).execute()).length,
    sessionsBefore.length,
  )
  t.equal((await whoami(owner)).json().role, 'owner')
})

t.test('nobody changes their own role', async (t) => {
  for (const [actor, role] of [
    [admin, 'member'],
    [admin, 'admin'],
    [owner, 'admin'],
    [owner, 'member'],
  ] as const) {
    const res = await call(app, 'POST', `/api/v1/admin/users/${actor.id}/role`, { cookie: actor.cookie, body: { role } })
    t.equal(res.statusCode, 403)
    t.equal(res.json().code, 'FORBIDDEN')
  }
  const self = await call(app, 'POST', `/api/v1/admin/users/${admin.id}/make-admin`, { cookie: admin.cookie, body: {} })
  t.equal(self.statusCode, 403)
  t.equal(await roleOf(admin.id), 'admin')
  t.equal(await roleOf(owner.id), 'owner')
})

t.test('the owner role cannot be granted through the API', async (t) => {
  const target = await signUp(app)
  for (const actor of [admin, owner]) {
    const res = await call(app, 'POST', `/api/v1/admin/users/${target.id}/role`, {
      cookie: actor.cookie,
      body: { role: 'owner' },
    })
    t.equal(res.statusCode, 403)
    t.equal(res.json().code, 'FORBIDDEN')
  }
  t.equal(await roleOf(target.id), 'member')
  t.equal((await auditOf(target.id, 'admin.user.role_changed')).length, 0, 'a refused act leaves no audit event')
})

t.test('setUserRole validates its body', async (t) => {
  const target = await signUp(app)
  for (const body of [{}, { role: 'root' }, { role: 'admin', extra: 1 }, { role: 'Admin' }, { role: 1 }]) {
    const res = await call(app, 'POST', `/api/v1/admin/users/${target.id}/role`, { cookie: admin.cookie, body })
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }
  const longId = await call(app, 'POST', `/api/v1/admin/users/${'x'.repeat(201)}/role`, {
    cookie: admin.cookie,
    body: { role: 'admin' },
  })
  t.ok(longId.statusCode >= 400 && longId.statusCode < 500, 'an oversized id is a client error')
  const extra = await call(app, 'POST', `/api/v1/admin/users/${target.id}/make-admin`, {
    cookie: admin.cookie,
    body: { role: 'owner' },
  })
  t.equal(extra.statusCode, 400, 'make-admin takes no keys')
  t.equal(await roleOf(target.id), 'member')
})

t.test('an admin can demote another admin', async (t) => {
  const other = await signUpWithRole(app, 'admin')
  const res = await call(app, 'POST', `/api/v1/admin/users/${other.id}/role`, { cookie: admin.cookie, body: { role: 'member' } })
  t.equal(res.statusCode, 200)
  t.equal(await roleOf(other.id), 'member')
})

t.test('revoke-sessions ends every session of the user and counts them', async (t) => {
  const target = await signUp(app)
  await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: target.email, password: target.password } })
  await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: target.email, password: target.password } })
  const res = await call(app, 'POST', `/api/v1/admin/users/${target.id}/revoke-sessions`, { cookie: admin.cookie, body: {} })
  t.same(res.json(), { revoked: 3 })
  t.equal((await whoami(target)).statusCode, 401)
  const again = await call(app, 'POST', `/api/v1/admin/users/${target.id}/revoke-sessions`, { cookie: admin.cookie })
  t.same(again.json(), { revoked: 0 }, 'works without a body too')
  const events = await auditOf(target.id, 'admin.user.sessions_revoked')
  t.same(
    events.map((e) => e.details),
    [
      { before: { sessions: 3 }, after: { sessions: 0 }, revoked: 3 },
      { before: { sessions: 0 }, after: { sessions: 0 }, revoked: 0 },
    ],
  )
  t.equal(events[0]!.actor_id, admin.id)
  t.equal(events[0]!.ip, '127.0.0.1')
})

t.test('plan changes apply at once and are audited with before and after', async (t) => {
  const target = await signUp(app)
  const expiresAt = new Date(Date.now() + 7 * 86_400_000).toISOString()
  const plus = await call(app, 'POST', `/api/v1/admin/users/${target.id}/premium-plus`, {
    cookie: admin.cookie,
    body: { expiresAt },
  })
  t.equal(plus.statusCode, 200)
  t.match(plus.json(), { plan: 'premium_plus', planExpiresAt: expiresAt })
  t.equal((await whoami(target)).json().plan, 'premium_plus')

  const forever = await call(app, 'POST', `/api/v1/admin/users/${target.id}/premium-plus`, { cookie: owner.cookie, body: {} })
  t.match(forever.json(), { plan: 'premium_plus', planExpiresAt: null })

  const premium = await call(app, 'POST', `/api/v1/admin/users/${target.id}/plan`, {
    cookie: admin.cookie,
    body: { plan: 'premium', expiresAt },
  })
  t.match(premium.json(), { plan: 'premium', planExpiresAt: expiresAt })
  const free = await call(app, 'POST', `/api/v1/admin/users/${target.id}/plan`, { cookie: admin.cookie, body: { plan: 'free' } })
  t.match(free.json(), { plan: 'free', planExpiresAt: null })

  const events = await auditOf(target.id, 'admin.user.plan_changed')
  t.same(
    events.map((e) => [e.details.before, e.details.after]),
    [
      [
        { plan: 'free', planExpiresAt: null },
        { plan: 'premium_plus', planExpiresAt: expiresAt },
      ],
      [
        { plan: 'premium_plus', planExpiresAt: expiresAt },
        { plan: 'premium_plus', planExpiresAt: null },
      ],
      [
        { plan: 'premium_plus', planExpiresAt: null },
        { plan: 'premium', planExpiresAt: expiresAt },
      ],
      [
        { plan: 'premium', planExpiresAt: expiresAt },
        { plan: 'free', planExpiresAt: null },
      ],
    ],
  )
  t.same(
    events.map((e) => e.actor_id),
    [admin.id, owner.id, admin.id, admin.id],
  )
})

t.test('plan routes refuse a past expiry, an expiry on free, unknown plans and unknown keys', async (t) => {
  const target = await signUp(app)
  const past = new Date(Date.now() - 60_000).toISOString()
  const cases: Array<[string, unknown]> = [
    ['premium-plus', { expiresAt: past }],
    ['premium-plus', { expiresAt: 'tomorrow' }],
    ['premium-plus', { plan: 'premium' }],
    ['plan', {}],
    ['plan', { plan: 'gold' }],
    ['plan', { plan: 'premium', expiresAt: past }],
    ['plan', { plan: 'free', expiresAt: new Date(Date.now() + 86_400_000).toISOString() }],
    ['plan', { plan: 'premium', role: 'admin' }],
  ]
  for (const [url, body] of cases) {
    const res = await call(app, 'POST', `/api/v1/admin/users/${target.id}/${url}`, { cookie: admin.cookie, body })
    t.equal(res.statusCode, 400, `${url} ${JSON.stringify(body)}`)
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }
  const row = await app.db
    .selectFrom('user')
    .select(['plan', 'plan_expires_at'])
    .where('id', '=', target.id)
    .executeTakeFirstOrThrow()
  t.same(row, { plan: 'free', plan_expires_at: null })
  t.equal((await auditOf(target.id, 'admin.user.plan_changed')).length, 0)
})

t.test('audit events never hold a password, token or secret', async (t) => {
  // recordAudit drops secret-looking keys at any depth, whatever the caller passes.
  const id = `scrub-${Date.now()}`
  await recordAudit(app.db, {
    actorId: admin.id,
    action: 'test.scrub',
    targetType: 'user',
    targetId: id,
    details: {
      password: 'hunter2hunter2',
      newPassword: 'x',
      token: 't',
      sessionToken: 's',
      clientSecret: 'c',
      passwordHash: 'h',
      cookie: 'better-auth.session_token=abc',
      authorization: 'Bearer x',
      nested: { currentPassword: 'p', keep: 'ok', list: [{ refreshToken: 'r', kept: 1 }] },
      role: 'admin',
      // A passkey is a public key: its id is kept, though its name starts like a password's.
      passkeyId: 'pk_1',
    },
  })
  const [row] = await auditOf(id, 'test.scrub')
  t.same(row!.details, { nested: { keep: 'ok', list: [{ kept: 1 }] }, role: 'admin', passkeyId: 'pk_1' })

  // And across everything this file did: sign-ups, sign-ins, admin acts.
  const all = await app.db.selectFrom('audit_event').select(['action', 'details']).execute()
  t.ok(all.length > 20)
  const text = JSON.stringify(all)
  for (const user of [admin, owner]) {
    t.notOk(text.includes(user.password), 'no password')
    t.notOk(text.includes(user.cookie.split('=')[1]!.split('.')[0]!), 'no session token')
  }
  const hashes = await app.db.selectFrom('session').select('token_hash').execute()
  const accountHashes = await app.db.selectFrom('account').select('password_hash').execute()
  for (const h of [...hashes.map((r) => r.token_hash), ...accountHashes.map((r) => r.password_hash)]) {
    if (h) t.notOk(text.includes(h), 'no hash')
  }
  t.notOk(/"(password|token|secret|[a-z]*Hash)"\s*:/i.test(text))
})
