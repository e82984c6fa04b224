// `npm run cli -- set-role` on the embedded database: refused with a clear message while a server
// holds the data directory, and working once the server has stopped.
import t from 'tap'
import { openDatabase } from '../../db/index.js'
import { WEB_ORIGIN } from '../helpers/app.js'
import { startServer } from '../helpers/server-process.js'
import { runCli } from '../helpers/cli.js'
import { auditEvents } from '../helpers/expect.js'
import { migratedDatabaseEnv } from '../helpers/db.js'

// Starts two servers and the command line twice: slow on a loaded 2-core machine, not a hang.
t.setTimeout(300_000)
// Nothing here depends on DATABASE_URL (the test forces the embedded database), so the PostgreSQL
// pass of the suite leaves it to the PGlite pass instead of running the same half minute again.
const embeddedPass = process.env.DATABASE_URL ? 'runs in the PGlite pass (DATABASE_URL unset); it never uses DATABASE_URL' : false

t.test(
  'on the embedded database: refused with a clear message while a server runs, works once it stopped',
  { skip: embeddedPass },
  async (t) => {
    const dir = (await migratedDatabaseEnv('cli')).PGLITE_DIR!
    const server = await startServer({ PGLITE_DIR: dir, DATABASE_URL: undefined }, 120_000)
    t.teardown(() => server.stop())
    const email = `cli-${process.pid}-${Date.now()}@example.com`
    const signUpRes = await fetch(`${server.url}/api/auth/sign-up/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: WEB_ORIGIN },
      body: JSON.stringify({ name: 'Cli', email, password: 'correct horse battery staple' }),
    })
    t.equal(signUpRes.status, 200)

    const refused = await runCli(['set-role', email, 'owner'], { PGLITE_DIR: dir })
    t.equal(refused.code, 3)
    t.match(refused.stderr, `in use by a running server or command (pid ${server.child.pid})`)
    t.match(refused.stderr, /Stop the server/)
    t.match(refused.stderr, /DATABASE_URL/)

    const second = await startServer({ PGLITE_DIR: dir, DATABASE_URL: undefined }, 120_000).then(
      (s) => {
        void s.stop()
        return 'started'
      },
      (err: Error) => err.message,
    )
    t.match(second, /in use by a running server/, 'a second server refuses the directory too')

    t.equal(await server.stop(), 0)
    const done = await runCli(['set-role', email, 'owner'], { PGLITE_DIR: dir })
    t.equal(done.code, 0, done.stderr)
    t.match(done.stdout, `${email} is now owner (was member)`)

    const handle = await openDatabase({ pgliteDir: dir, poolSize: 1 })
    try {
      const row = await handle.db.selectFrom('user').select(['id', 'role']).where('email', '=', email).executeTakeFirstOrThrow()
      t.equal(row.role, 'owner')
      const audit = await auditEvents(handle.db, { action: 'admin.user.role_changed', targetId: row.id })
      t.equal(audit.length, 1)
    } finally {
      await handle.close()
    }
  },
)
