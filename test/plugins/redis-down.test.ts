// With REDIS_URL set and Redis gone, the service keeps serving and says so in /api/health and the log;
// the budgets are counted in this instance's memory meanwhile, so they still hold.
import t from 'tap'
import { logLines } from '../helpers/log-lines.js'
import { buildTestApp, signUp, WEB_ORIGIN } from '../helpers/app.js'
import { retarget, TcpProxy } from '../helpers/tcp-proxy.js'

const redisUrl = process.env.REDIS_URL
if (!redisUrl) {
  t.skip('REDIS_URL is not set: the Redis outage test needs a Redis server', async () => {})
} else {
  const target = retarget(redisUrl, 0)
  const proxy = new TcpProxy(target.host, target.port)
  const port = await proxy.start()
  t.teardown(() => proxy.close())
  const { stream: logStream, lines } = logLines()
  const app = await buildTestApp({
    env: {
      REDIS_URL: retarget(redisUrl, port).url,
      REDIS_KEY_PREFIX: `redis-down-${process.pid}-${Date.now()}:`,
      LOG_LEVEL: 'info',
      // Unknown clients share 4 a minute per address, one client at most half of it: 2 (rate-limit.ts).
      RATE_LIMIT_SIGN_IN_EMAIL_PER_MINUTE: '4',
    },
    deps: { logStream },
  })
  const waitFor = async (predicate: () => boolean) => {
    for (let i = 0; i < 100 && !predicate(); i++) await new Promise((r) => setTimeout(r, 50))
  }

  t.test('health reports Redis ok while it answers', async (t) => {
    await waitFor(() => app.redis?.status === 'ready')
    const res = await app.inject({ method: 'GET', url: '/api/health' })
    t.equal(res.statusCode, 200)
    t.match(res.json(), { status: 'ok', database: 'ok', redis: 'ok' })
  })

  t.test('with Redis gone the service keeps serving, degraded, and logs it', async (t) => {
    await proxy.cut()
    await waitFor(() => app.redis?.status !== 'ready')
    const health = await app.inject({ method: 'GET', url: '/api/health' })
    t.equal(health.statusCode, 200)
    t.match(health.json(), { status: 'degraded', database: 'ok', redis: 'down' })
    const user = await signUp(app)
    const who = await app.inject({ method: 'GET', url: '/api/v1/whoami', headers: { cookie: user.cookie } })
    t.equal(who.statusCode, 200, 'sign-up and a session work without Redis')
    t.ok(
      lines.some((l) => l.includes('redis unavailable')),
      'the outage is in the log',
    )
    const statuses: number[] = []
    for (let i = 0; i < 3; i++) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/auth/sign-in/email',
        headers: { origin: WEB_ORIGIN },
        payload: { email: user.email, password: 'not the password' },
      })
      statuses.push(res.statusCode)
    }
    t.same(statuses, [401, 401, 429], "the sign-in budget still holds, counted in this instance's memory")
  })

  t.test('when Redis returns, health says ok again', async (t) => {
    await proxy.restore()
    await waitFor(() => app.redis?.status === 'ready')
    const res = await app.inject({ method: 'GET', url: '/api/health' })
    t.match(res.json(), { status: 'ok', redis: 'ok' })
    t.ok(lines.some((l) => l.includes('redis connection restored')))
  })
}
