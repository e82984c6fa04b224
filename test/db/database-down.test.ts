// PostgreSQL going away and coming back while the app runs: 503 with Retry-After, never a 500,
// never a crash, and back to 200 by itself. A TCP proxy plays the database going down.
import t from 'tap'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { PUBLIC } from '../../src/shared/route-policy.js'
import { signUp, TEST_ENV, WEB_ORIGIN } from '../helpers/app.js'
import { freshPostgresUrl, usingPostgres } from '../helpers/db.js'
import { retarget, TcpProxy } from '../helpers/tcp-proxy.js'

if (!usingPostgres()) {
  t.plan(0, 'database outage test needs a PostgreSQL server: set DATABASE_URL (PGlite runs in-process and cannot go down)')
} else {
  await outageTests()
}

async function outageTests() {
  const url = await freshPostgresUrl()
  const target = retarget(url, 0)
  const proxy = new TcpProxy(target.host, target.port)
  const port = await proxy.start()
  t.teardown(() => proxy.close())

  const config = loadConfig({ ...TEST_ENV, DATABASE_URL: retarget(url, port).url })
  const app = await buildApp(config) // opens (and migrates) its own pool through the proxy
  t.teardown(() => app.close())
  app.get('/api/v1/test-db-probe', { config: { policy: PUBLIC } }, async () => {
    const row = await app.db
      .selectFrom('user')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    return { users: row.n }
  })
  await app.ready()

  // A hang would otherwise only show as the file's timeout; this names the request that hung.
  async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined
    const hang = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms)
    })
    try {
      return await Promise.race([promise, hang])
    } finally {
      clearTimeout(timer)
    }
  }

  const user = await signUp(app)

  t.test('the database is up: health 200', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/api/health' })
    t.equal(res.statusCode, 200)
    t.match(res.json(), { status: 'ok', database: 'ok' })
  })

  t.test('the database goes down: 503 with Retry-After, never a 500', async (t) => {
    await proxy.cut()

    const health = await within(5000, 'health', app.inject({ method: 'GET', url: '/api/health' }))
    t.equal(health.statusCode, 503)
    t.equal(health.headers['retry-after'], '5')
    t.match(health.json(), { status: 'unavailable', database: 'down', version: String })

    const probe = await within(5000, 'a database route', app.inject({ method: 'GET', url: '/api/v1/test-db-probe' }))
    t.equal(probe.statusCode, 503)
    t.equal(probe.headers['retry-after'], '5')
    t.same(probe.json(), {
      code: 'SERVICE_UNAVAILABLE',
      status: 503,
      message: 'The service is temporarily unavailable',
      data: { retryAfter: 5 },
      defined: false,
    })

    const signIn = await within(
      5000,
      'sign-in',
      app.inject({
        method: 'POST',
        url: '/api/auth/sign-in/email',
        headers: { origin: WEB_ORIGIN },
        payload: { email: user.email, password: user.password },
      }),
    )
    t.equal(signIn.statusCode, 503, 'sign-in during the outage')
    t.equal(signIn.json().code, 'SERVICE_UNAVAILABLE')
    t.notMatch(signIn.body, /ECONNREFUSED|127\.0\.0\.1|connect/i, 'no driver text leaks')

    const session = await within(
      5000,
      'get-session',
      app.inject({
        method: 'GET',
        url: '/api/auth/get-session',
        headers: { origin: WEB_ORIGIN, cookie: user.cookie },
      }),
    )
    t.equal(session.statusCode, 503, 'session validation during the outage')

    const live = await app.inject({ method: 'GET', url: '/api/health/live' })
    t.equal(live.statusCode, 200, 'liveness does not depend on the database')
  })

  t.test('the database comes back: the service recovers by itself', async (t) => {
    await proxy.restore()
    let status = 0
    for (let attempt = 0; attempt < 100 && status !== 200; attempt++) {
      status = (await app.inject({ method: 'GET', url: '/api/health' })).statusCode
      if (status !== 200) await new Promise((r) => setTimeout(r, 100))
    }
    t.equal(status, 200, 'health is 200 again')
    const probe = await app.inject({ method: 'GET', url: '/api/v1/test-db-probe' })
    t.equal(probe.statusCode, 200)
    t.ok(probe.json().users >= 1)
    const signIn = await app.inject({
      method: 'POST',
      url: '/api/auth/sign-in/email',
      headers: { origin: WEB_ORIGIN },
      payload: { email: user.email, password: user.password },
    })
    t.equal(signIn.statusCode, 200, 'sign-in works again')
  })
}
