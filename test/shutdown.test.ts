// Graceful shutdown of the real server process: SIGTERM lets an in-flight request finish, refuses
// new ones, closes the database and exits 0. And in process: closing the app lets a running
// handler finish before the hash pool and the database close.
import { connect, type Socket } from 'node:net'
import t from 'tap'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { call, signUp, TEST_ENV, WEB_ORIGIN, uniqueEmail } from './helpers/app.js'
import { migratedDatabaseEnv, testDatabase } from './helpers/db.js'
import { startServer } from './helpers/server-process.js'
import { startSmtpServer } from './helpers/smtp.js'

// Spawns real processes: slow on a loaded machine, not a hang.
t.setTimeout(240_000)

async function waitFor(what: string, check: () => boolean, attempts = 200): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (check()) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`gave up waiting for ${what}`)
}

/** Reads one HTTP response from a raw socket (the server closes the connection after it). */
function readResponse(socket: Socket): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    let raw = ''
    const done = () => {
      const [head = '', ...rest] = raw.split('\r\n\r\n')
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0)
      resolve({ status, headers: head, body: rest.join('\r\n\r\n') })
    }
    socket.setEncoding('utf8')
    socket.on('data', (chunk) => {
      raw += chunk
      const length = /content-length: (\d+)/i.exec(raw)?.[1]
      const split = raw.indexOf('\r\n\r\n')
      if (length && split !== -1 && Buffer.byteLength(raw.slice(split + 4)) >= Number(length)) done()
    })
    socket.on('end', done)
    socket.on('error', reject)
  })
}

t.test('SIGTERM during a slow request lets it finish, refuses new requests and exits 0', async (t) => {
  const server = await startServer({ ...(await migratedDatabaseEnv('shutdown')), LOG_LEVEL: 'debug' }, 90_000)
  t.teardown(() => server.stop('SIGKILL'))
  const { hostname, port } = new URL(server.url)

  // A sign-up whose body arrives in two halves: the request is in flight while the signal comes.
  const email = uniqueEmail('shutdown')
  const body = JSON.stringify({ name: 'Slow Client', email, password: 'correct horse battery staple' })
  const half = Math.floor(body.length / 2)
  const socket = connect(Number(port), hostname)
  t.teardown(() => socket.destroy())
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  const response = readResponse(socket)
  socket.write(
    'POST /api/auth/sign-up/email HTTP/1.1\r\n' +
      `Host: ${hostname}:${port}\r\n` +
      `Origin: ${WEB_ORIGIN}\r\n` +
      'Content-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'x-request-id: slow-sign-up\r\n\r\n' +
      body.slice(0, half),
  )
  await waitFor('the server to receive the slow request', () =>
    /"reqId":"slow-sign-up"[^\n]*incoming request/.test(server.output()),
  )

  server.child.kill('SIGTERM')
  await waitFor('shutdown to begin', () => /shutting down/.test(server.output()))

  // A new request on a fresh connection: refused (no longer listening) or 503, never served.
  try {
    const res = await fetch(`${server.url}/api/health/live`, { headers: { connection: 'close' } })
    t.equal(res.status, 503, 'a new request during shutdown gets 503')
    t.equal((await res.json()).code, 'SERVICE_UNAVAILABLE')
  } catch (err) {
    t.match(String((err as { cause?: { code?: string } }).cause?.code), /ECONNREFUSED|ECONNRESET/, 'a new connection is refused')
  }
  t.equal(server.child.exitCode, null, 'the process waits for the in-flight request')

  socket.write(body.slice(half))
  const finished = await response
  t.equal(finished.status, 200, 'the in-flight request completes with its normal answer')
  t.match(JSON.parse(finished.body), { user: { email } })

  t.equal(await server.exited, 0, 'the process exits 0')
  t.notMatch(server.output(), /"level":(50|60)/, 'no error was logged during shutdown')
})

t.test(
  'closing the app lets a sign-in in the middle of its hash finish, session written, before the pool and database close',
  async (t) => {
    // The app owns its database here, so close() closes it (buildTestApp's apps share the file's):
    // a migrated one of its own, a copy of the run's snapshot or template.
    const database = await migratedDatabaseEnv('shutdown-close')
    const app = await buildApp(loadConfig({ ...TEST_ENV, ...database }))
    await app.ready()
    const user = await signUp(app)

    // A client that has gone away looks the same to the handler: nobody waits on the connection.
    const signIn = call(app, 'POST', '/api/auth/sign-in/email', { body: { email: user.email, password: user.password } })
    for (let i = 0; i < 10_000 && app.hasher.pool.inFlight === 0; i++) await new Promise((r) => setImmediate(r))
    t.ok(app.hasher.pool.inFlight > 0, 'the password is being verified')
    await app.close()

    const res = await signIn
    t.equal(res.statusCode, 200, 'the sign-in finished normally')
    t.match(res.headers['set-cookie'], /session_token=[^;]+/, 'its session was written and its cookie set')
  },
)

t.test('closing the app sends the mail that work after a reply queued before close resolves', async (t) => {
  const smtp = await startSmtpServer()
  // The file's database, which close() leaves open (deps.database is the caller's).
  const app = await buildApp(loadConfig({ ...TEST_ENV, SMTP_URL: smtp.url }), { database: await testDatabase() })
  await app.ready()
  const user = await signUp(app)
  const res = await call(app, 'POST', '/api/auth/request-password-reset', { body: { email: user.email } })
  t.equal(res.statusCode, 200)
  // The reset's lookup, token and mail run after the reply: close() begins while they are under way.
  await app.close()
  const sent = smtp.inbox.for(user.email).filter((m) => m.subject === 'Reset your password')
  t.equal(sent.length, 1, 'the reset mail reached the SMTP server before close() resolved')
})
