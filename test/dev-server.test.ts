// The server as a developer first meets it (`npm start`, `npm run dev`): no AUTH_SECRET, no AUTH_URL,
// the embedded database. Its first lines say which address to open, which origins are trusted and
// where the reference is; a restart keeps everyone signed in; a second process on the same data
// folder gets one line, not a stack trace.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { WEB_ORIGIN } from './helpers/app.js'
import { startServer } from './helpers/server-process.js'

// The embedded database only: the PostgreSQL pass has nothing of its own to add here.
const embeddedPass = process.env.DATABASE_URL ? 'runs in the PGlite pass (DATABASE_URL unset); it never uses DATABASE_URL' : false

t.test(
  'a development server: its first lines, a restart that keeps the session, a second process refused',
  { skip: embeddedPass },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'insight-dev-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const env = {
      NODE_ENV: 'development',
      LOG_LEVEL: 'info',
      PGLITE_DIR: dir,
      DATABASE_URL: undefined,
      AUTH_SECRET: undefined,
      AUTH_URL: undefined,
    }
    const first = await startServer(env, 120_000)
    t.teardown(() => first.stop())
    const port = new URL(first.url).port
    const browserUrl = `http://localhost:${port}`
    const out = await first.outputWith('Development mail')
    t.match(out, `Listening on ${first.url}; browsers use ${browserUrl}`)
    t.match(out, `Open the API as ${browserUrl} (AUTH_URL)`)
    t.match(out, `Trusted origins: ${browserUrl}, ${WEB_ORIGIN}`)
    t.match(out, /AUTH_TRUSTED_ORIGIN/)
    t.match(out, `API reference: ${browserUrl}/api/v1/docs`)
    t.match(out, `Development mail (sign-in codes and links): ${browserUrl}/api/dev/mail`)

    const signUp = await fetch(`${first.url}/api/auth/sign-up/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: WEB_ORIGIN },
      body: JSON.stringify({ name: 'Dev', email: `dev-${process.pid}@example.com`, password: 'correct horse battery staple' }),
    })
    t.equal(signUp.status, 200)
    const cookie = signUp.headers.getSetCookie()[0]!.split(';', 1)[0]!

    const second = await startServer(env, 120_000).then(
      (s) => {
        void s.stop()
        return 'started'
      },
      (err: Error) => err.message,
    )
    t.match(second, /Start-up failed: The embedded database in .* is in use by a running server or command/)
    t.notMatch(second, /\n\s+at /, 'no stack trace')

    t.equal(await first.stop(), 0)
    const restarted = await startServer(env, 120_000)
    t.teardown(() => restarted.stop())
    const session = await fetch(`${restarted.url}/api/auth/get-session`, { headers: { cookie } })
    t.match(await session.json(), { user: { name: 'Dev' } }, 'still signed in after the restart')
    t.equal(await restarted.stop(), 0)
  },
)
