import t from 'tap'
import { buildTestApp, call, signUp, signUpWithRole, type TestUser } from '../helpers/app.js'
import { auditEvents } from '../helpers/expect.js'

const app = await buildTestApp()

const member = await signUp(app)
const admin = await signUpWithRole(app, 'admin')
const owner = await signUpWithRole(app, 'owner')

interface AdminRoute {
  name: string
  method: 'GET' | 'POST'
  url: (target: string) => string
  body?: unknown
  action: string
}

/** A POST that acts on one user: /api/v1/admin/users/:id/<path>. */
const act = (name: string, path: string, body: unknown, action: string): AdminRoute => ({
  name,
  method: 'POST',
  url: (id) => `/api/v1/admin/users/${id}/${path}`,
  body,
  action,
})

/** Every admin route, with a fresh member as its target so that acts never collide. */
const routes: AdminRoute[] = [
  { name: 'listUsers', method: 'GET', url: () => '/api/v1/admin/users', action: 'admin.users.listed' },
  { name: 'getUser', method: 'GET', url: (id) => `/api/v1/admin/users/${id}`, action: 'admin.user.viewed' },
  act('makeUserAdmin', 'make-admin', {}, 'admin.user.role_changed'),
  act('setUserRole', 'role', { role: 'member' }, 'admin.user.role_changed'),
  act('setUserPremiumPlus', 'premium-plus', {}, 'admin.user.plan_changed'),
  act('setUserPlan', 'plan', { plan: 'premium' }, 'admin.user.plan_changed'),
  act('revokeUserSessions', 'revoke-sessions', {}, 'admin.user.sessions_revoked'),
  act('removeUserSecondFactor', 'remove-second-factor', {}, 'admin.user.second_factor_removed'),
  { name: 'getUsageAnalytics', method: 'GET', url: () => '/api/v1/admin/analytics/usage', action: 'admin.analytics.viewed' },
  { name: 'listAuditEvents', method: 'GET', url: () => '/api/v1/admin/audit', action: 'admin.audit.listed' },
]

const auditCount = async (actorId: string, action: string) => (await auditEvents(app.db, { action, actorId })).length

// That no session is 401 and a member 403 on every admin route is proven for every route by
// test/plugins/route-policy.test.ts; here, what the refusal leaves behind and what an admin's call writes.
for (const route of routes) {
  t.test(`${route.name}: a member's call changes nothing and is not audited, admin and owner get 200`, async (t) => {
    const target: TestUser = await signUp(app)
    const roleBefore = async () =>
      await app.db.selectFrom('user').select(['role', 'plan']).where('id', '=', target.id).executeTakeFirstOrThrow()

    const before = await roleBefore()
    await call(app, route.method, route.url(target.id), { cookie: member.cookie, body: route.body })
    t.same(await roleBefore(), before, 'a refused act changes nothing')

    // Even a malformed request from a member is 403, not a 400 that would describe the schema.
    const probing = await call(app, route.method, `${route.url(target.id)}${route.method === 'GET' ? '?bogus=1' : ''}`, {
      cookie: member.cookie,
      body: route.method === 'POST' ? { bogus: true } : undefined,
    })
    t.equal(probing.statusCode, 403)

    t.equal(await auditCount(member.id, route.action), 0, 'a refused call is not an act')

    for (const actor of [admin, owner]) {
      const audited = await auditCount(actor.id, route.action)
      const res = await call(app, route.method, route.url(target.id), { cookie: actor.cookie, body: route.body })
      t.equal(res.statusCode, 200, `${actor === admin ? 'admin' : 'owner'}: ${res.body.slice(0, 200)}`)
      t.equal(await auditCount(actor.id, route.action), audited + 1, `one ${route.action} event`)
      if (route.name === 'makeUserAdmin') {
        // put the target back so the owner's call acts on a member again
        await app.db.updateTable('user').set({ role: 'member' }).where('id', '=', target.id).execute()
      }
    }
  })
}

t.test('an unknown user is 404 on every per-user admin route', async (t) => {
  for (const route of routes.filter((r) => r.url('x').includes('/users/x'))) {
    const res = await call(app, route.method, route.url('no-such-user'), { cookie: admin.cookie, body: route.body })
    t.equal(res.statusCode, 404, route.name)
    t.equal(res.json().code, 'NOT_FOUND')
  }
})
