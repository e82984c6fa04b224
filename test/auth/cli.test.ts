// `npm run cli -- set-role` on PostgreSQL, while the app runs. The embedded database: cli-embedded.test.ts.
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { openDatabase } from '../../db/index.js'
import { migrateToLatest } from '../../db/migrate.js'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { call, signUp, TEST_ENV } from '../helpers/app.js'
import { freshPostgresUrl, usingPostgres } from '../helpers/db.js'

// Each run of the command line starts a fresh Node process with tsx: seconds each on a busy machine.
t.setTimeout(240_000)
const ROOT = fileURLToPath(new URL('../../', import.meta.url))

function runCli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', ...args], { cwd: ROOT, env: { PATH: process.env.PATH!, ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr })
    })
  })
}

t.test('usage errors: unknown command, unknown role', async (t) => {
  for (const args of [['set-role', 'a@example.com', 'superuser'], ['make-owner', 'a@example.com']]) {
    const res = await runCli(args, { PGLITE_DIR: 'memory://' })
    t.equal(res.code, 2, args.join(' '))
    t.match(res.stderr, /Usage:\s+npm run cli -- set-role <email> <member\|admin\|owner>/)
  }
})

t.test('on PostgreSQL it works while the app runs, and the role applies at the next request', { skip: usingPostgres() ? false : 'DATABASE_URL is not set: the PostgreSQL case is not tested' }, async (t) => {
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
  const audit = await handle.db.selectFrom('audit_event').selectAll().where('target_id', '=', user.id).where('action', '=', 'admin.user.role_changed').execute()
  t.equal(audit.length, 1)
  t.match(audit[0]!.details, { from: 'member', to: 'admin', via: 'cli' })
  const unknown = await runCli(['set-role', 'nobody@example.com', 'owner'], { DATABASE_URL: url })
  t.equal(unknown.code, 1)
  t.match(unknown.stderr, /No account with the email nobody@example.com/)
})
