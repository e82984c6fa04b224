// `npm run cli -- set-role` on PostgreSQL, while the app runs. The embedded database: cli-embedded.test.ts.
import t from 'tap'
import { openDatabase } from '../../db/index.js'
import { migrateToLatest } from '../../db/migrate.js'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { setRole } from '../../src/cli/set-role.js'
import { buildTestApp, call, signUp, signUpWithRole, TEST_ENV } from '../helpers/app.js'
import { freshPostgresUrl, usingPostgres } from '../helpers/db.js'
import { runCli } from '../helpers/cli.js'
import { auditEvents } from '../helpers/expect.js'

// Each run of the command line starts a fresh Node process: seconds each on a busy machine.
t.setTimeout(240_000)
t.test('usage errors: unknown command, unknown role', async (t) => {
  for (const args of [
    ['set-role', 'a@example.com', 'superuser'],
    ['make-owner', 'a@example.com'],
  ]) {
    const res = await runCli(args, { PGLITE_DIR: 'memory://' })
    t.equal(res.code, 2, args.join(' '))
    t.match(res.stderr, /Usage:\s+npm run cli -- set-role <email> <member\|admin\|owner>/)
  }
})

t.test(
  'on PostgreSQL it works while the app runs, and the role applies at the next request',
  { skip: usingPostgres() ? false : 'DATABASE_URL is not set: the PostgreSQL case is not tested' },
  async (t) => {
    const url = await freshPostgresUrl()
    const handle = await openDatabase({ url, pgliteDir: 'memory://', poolSize: 4 })
    await migrateToLatest(handle.db)
    const app = await buildApp(loadConfig(TEST_ENV), { database: handle })
    t.teardown(async () => {
      await app.close()
      await handle.close()
    })
    await app.ready()
    const user = await signUp(app)
    const res = await runCli(['set-role', user.email.toUpperCase(), 'admin'], { DATABASE_URL: url })
    t.equal(res.code, 0, res.stderr)
    t.match(res.stdout, `${user.email.toUpperCase()} is now admin (was member)`)
    t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: user.cookie })).json().role, 'admin')
    const audit = await auditEvents(handle.db, { action: 'admin.user.role_changed', targetId: user.id })
    t.equal(audit.length, 1)
    // The one shape of every role change (admin API, command line, bootstrap): changeRole's.
    t.same(audit[0]!.details, { via: 'cli', before: { role: 'member' }, after: { role: 'admin' }, sessionsRevoked: 0 })

    // A demotion from the command line ends the sessions opened with admin rights.
    const demoted = await runCli(['set-role', user.email, 'member'], { DATABASE_URL: url })
    t.equal(demoted.code, 0, demoted.stderr)
    t.match(demoted.stdout, `${user.email} is now member (was admin)`)
    t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: user.cookie })).statusCode, 401)
    const unknown = await runCli(['set-role', 'nobody@example.com', 'owner'], { DATABASE_URL: url })
    t.equal(unknown.code, 1)
    t.match(unknown.stderr, /No account with the email nobody@example.com/)
  },
)

// setRole is what `set-role` runs; in process, so both databases test it.
t.test('a demotion from the command line ends the sessions opened with the lost rights', async (t) => {
  const app = await buildTestApp()
  const whoami = (cookie: string) => call(app, 'GET', '/api/v1/whoami', { cookie })
  const auditOf = (id: string) => auditEvents(app.db, { action: 'admin.user.role_changed', targetId: id })

  const admin = await signUpWithRole(app, 'admin')
  const second = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: admin.email, password: admin.password } })
  t.equal(second.statusCode, 200)
  t.equal((await whoami(admin.cookie)).json().role, 'admin')
  t.same(await setRole(app.db, admin.email, 'member'), { ok: true, from: 'admin', to: 'member', sessionsRevoked: 2 })
  t.equal((await whoami(admin.cookie)).statusCode, 401, 'the old cookie is refused')
  t.same(
    (await auditOf(admin.id)).map((e) => e.details),
    [{ via: 'cli', before: { role: 'admin' }, after: { role: 'member' }, sessionsRevoked: 2 }],
  )
  const again = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: admin.email, password: admin.password } })
  t.equal(again.json().user.role, 'member', 'signing in again gives a member session')

  // owner -> admin is a demotion too: the owner's sessions carried owner rights.
  const owner = await signUpWithRole(app, 'owner')
  t.same(await setRole(app.db, owner.email, 'admin'), { ok: true, from: 'owner', to: 'admin', sessionsRevoked: 1 })
  t.equal((await whoami(owner.cookie)).statusCode, 401)

  // A promotion keeps the sessions; setting the same role changes and audits nothing.
  const member = await signUp(app)
  t.same(await setRole(app.db, member.email, 'owner'), { ok: true, from: 'member', to: 'owner', sessionsRevoked: 0 })
  t.equal((await whoami(member.cookie)).json().role, 'owner')
  t.same(await setRole(app.db, member.email, 'owner'), { ok: true, from: 'owner', to: 'owner', sessionsRevoked: 0 })
  t.same(
    (await auditOf(member.id)).map((e) => e.details),
    [{ via: 'cli', before: { role: 'member' }, after: { role: 'owner' }, sessionsRevoked: 0 }],
  )
  t.same(await setRole(app.db, 'nobody@example.com', 'admin'), { ok: false, reason: 'no_such_user' })
})
