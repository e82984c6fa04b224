// Roles in the route policy: plain string comparison, 403 FORBIDDEN for a member, admin and owner pass.
import t from 'tap'
import { buildApp } from '../../src/app.js'
import { ADMIN } from '../../src/shared/route-policy.js'
import { loadConfig } from '../../src/config.js'
import { call, signUp, signUpWithRole, TEST_ENV } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

const app = await buildApp(loadConfig(TEST_ENV), { database: await testDatabase() })
t.teardown(() => app.close())
app.get('/api/v1/test/admin-only', { config: { policy: ADMIN } }, async () => ({ ok: true }))
app.get('/api/v1/test/signed-in', async () => ({ ok: true })) // no policy: the default, a session
await app.ready()

t.test('a member on an admin-only route gets 403 FORBIDDEN', async (t) => {
  const member = await signUp(app)
  const res = await call(app, 'GET', '/api/v1/test/admin-only', { cookie: member.cookie })
  t.equal(res.statusCode, 403)
  t.match(res.json(), { code: 'FORBIDDEN', status: 403 })
  t.equal((await call(app, 'GET', '/api/v1/test/signed-in', { cookie: member.cookie })).statusCode, 200)
})

t.test('admin and owner pass the admin-only route', async (t) => {
  for (const role of ['admin', 'owner'] as const) {
    const user = await signUpWithRole(app, role)
    const res = await call(app, 'GET', '/api/v1/test/admin-only', { cookie: user.cookie })
    t.equal(res.statusCode, 200, role)
    t.same(res.json(), { ok: true })
  }
})

t.test('a role change applies at the very next request, both ways', async (t) => {
  const user = await signUpWithRole(app, 'admin')
  t.equal((await call(app, 'GET', '/api/v1/test/admin-only', { cookie: user.cookie })).statusCode, 200)
  await app.db.updateTable('user').set({ role: 'member' }).where('id', '=', user.id).execute()
  t.equal((await call(app, 'GET', '/api/v1/test/admin-only', { cookie: user.cookie })).statusCode, 403)
})

t.test('a role that merely looks like admin is not admin (plain comparison)', async (t) => {
  const user = await signUp(app)
  // The CHECK constraint refuses anything but the three roles, so no "Admin" or "admin " can exist.
  await t.rejects(
    app.db
      .updateTable('user')
      .set({ role: 'Admin' as 'admin' })
      .where('id', '=', user.id)
      .execute(),
  )
  t.equal((await call(app, 'GET', '/api/v1/test/admin-only', { cookie: user.cookie })).statusCode, 403)
})
