// Rate limits: global per IP, sign-in per IP and per email, sign-up per IP, mail per email; in
// memory, shared through Redis when REDIS_URL is set, and never an outage when Redis is down.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { clientKey, MemoryWindows } from '../../src/plugins/rate-limit.js'
import { buildTestApp, signUp, uniqueEmail, WEB_ORIGIN } from '../helpers/app.js'
import { redisTest } from '../helpers/redis.js'

const PASSWORD = 'correct horse battery staple'
let ipCounter = 1
const freshIp = () => `10.${process.pid % 250}.${Math.floor(ipCounter / 250)}.${ipCounter++ % 250}`

function send(app: FastifyInstance, method: 'GET' | 'POST', url: string, ip: string, body?: object) {
  return app.inject({ method, url, remoteAddress: ip, headers: { origin: WEB_ORIGIN }, ...(body ? { payload: body } : {}) })
}

t.test('memory windows: a fixed window per key from its first request, and a bounded number of keys', async (t) => {
  let now = 1_000_000
  const windows = new MemoryWindows({ max: 2, windowMs: 60_000 }, () => now, 3)
  t.same(windows.take('a'), { exceeded: false, retryAfter: 0 })
  t.same(windows.take('a'), { exceeded: false, retryAfter: 0 })
  now += 20_000
  t.same(windows.take('a'), { exceeded: true, retryAfter: 40 }, 'the third in the window, until its end')
  t.same(windows.take('b'), { exceeded: false, retryAfter: 0 }, 'another key has its own window')
  now += 40_000
  t.same(windows.take('a'), { exceeded: false, retryAfter: 0 }, 'a new window once the old one ended')
  windows.take('c')
  windows.take('d') // a fourth key: the oldest window (b) is dropped
  t.same(windows.take('b'), { exceeded: false, retryAfter: 0 })
  t.same(windows.take('b'), { exceeded: false, retryAfter: 0 })
  t.same(windows.take('b'), { exceeded: true, retryAfter: 60 }, 'and b starts over')
})

t.test('memory store', async (t) => {
  t.test('the global limit counts per IP and answers 429 RATE_LIMITED with Retry-After', async (t) => {
    const app = await buildTestApp({ env: { RATE_LIMIT_GLOBAL_PER_MINUTE: '5' } })
    const ip = freshIp()
    for (let i = 0; i < 5; i++) t.equal((await send(app, 'GET', '/api/auth/get-session', ip)).statusCode, 200)
    const limited = await send(app, 'GET', '/api/auth/get-session', ip)
    t.equal(limited.statusCode, 429)
    t.match(limited.json(), { code: 'RATE_LIMITED', status: 429, message: String })
    const retryAfter = Number(limited.headers['retry-after'])
    t.ok(retryAfter > 0 && retryAfter <= 60, `Retry-After ${retryAfter}`)
    t.equal(limited.headers['access-control-allow-origin'], WEB_ORIGIN, 'the browser can read the 429')
    t.equal((await send(app, 'GET', '/api/v1/nothing-here', ip)).statusCode, 429, 'unknown routes count too')
    t.equal((await send(app, 'GET', '/api/auth/get-session', freshIp())).statusCode, 200, 'another IP has its own budget')
    t.equal((await send(app, 'GET', '/api/health/live', ip)).statusCode, 200, 'health probes are not limited')
  })

  t.test('sign-in: per IP, whatever the email', async (t) => {
    const app = await buildTestApp({ env: { RATE_LIMIT_SIGN_IN_IP_PER_MINUTE: '3' } })
    const ip = freshIp()
    for (let i = 0; i < 3; i++) {
      t.equal(
        (await send(app, 'POST', '/api/auth/sign-in/email', ip, { email: uniqueEmail(), password: PASSWORD })).statusCode,
        401,
      )
    }
    const limited = await send(app, 'POST', '/api/auth/sign-in/email', ip, { email: uniqueEmail(), password: PASSWORD })
    t.equal(limited.statusCode, 429)
    t.match(limited.json(), { code: 'RATE_LIMITED' })
    t.ok(Number(limited.headers['retry-after']) > 0)
    t.equal(
      (await send(app, 'POST', '/api/auth/sign-in/email', freshIp(), { email: uniqueEmail(), password: PASSWORD })).statusCode,
      401,
    )
    t.equal((await send(app, 'GET', '/api/auth/get-session', ip)).statusCode, 200, 'other routes are not affected')
  })

  t.test('sign-in: per email, whatever the IP, case-insensitive', async (t) => {
    const app = await buildTestApp({ env: { RATE_LIMIT_SIGN_IN_EMAIL_PER_MINUTE: '2' } })
    const user = await signUp(app)
    t.equal(
      (await send(app, 'POST', '/api/auth/sign-in/email', freshIp(), { email: user.email, password: 'wrong guess 1' }))
        .statusCode,
      401,
    )
    t.equal(
      (
        await send(app, 'POST', '/api/auth/sign-in/email', freshIp(), {
          email: user.email.toUpperCase(),
          password: 'wrong guess 2',
        })
      ).statusCode,
      401,
    )
    const limited = await send(app, 'POST', '/api/auth/sign-in/email', freshIp(), { email: user.email, password: user.password })
    t.equal(limited.statusCode, 429, 'even the right password waits: a guesser cannot tell')
    t.match(limited.json(), { code: 'RATE_LIMITED' })
    t.equal(
      (await send(app, 'POST', '/api/auth/sign-in/email', freshIp(), { email: uniqueEmail(), password: PASSWORD })).statusCode,
      401,
      'another email is free',
    )
  })

  t.test('sign-up: per IP', async (t) => {
    const app = await buildTestApp({ env: { RATE_LIMIT_SIGN_UP_IP_PER_MINUTE: '2' } })
    const ip = freshIp()
    for (let i = 0; i < 2; i++) {
      t.equal(
        (await send(app, 'POST', '/api/auth/sign-up/email', ip, { name: 'N', email: uniqueEmail(), password: PASSWORD }))
          .statusCode,
        200,
      )
    }
    const email = uniqueEmail()
    const limited = await send(app, 'POST', '/api/auth/sign-up/email', ip, { name: 'N', email, password: PASSWORD })
    t.equal(limited.statusCode, 429)
    t.notOk(await app.db.selectFrom('user').select('id').where('email', '=', email).executeTakeFirst(), 'no account was made')
  })

  t.test('mail: per email per hour, one budget for reset and verification mail', async (t) => {
    const app = await buildTestApp({ env: { RATE_LIMIT_MAIL_PER_HOUR: '2' } })
    const user = await signUp(app)
    // The mail routes write their token after the reply: wait for that work before counting.
    const tokens = async () => {
      await app.settled()
      return (await app.db.selectFrom('verification').select('id').where('user_id', '=', user.id).execute()).length
    }
    t.equal((await send(app, 'POST', '/api/auth/request-password-reset', freshIp(), { email: user.email })).statusCode, 200)
    t.equal((await send(app, 'POST', '/api/auth/send-verification-email', freshIp(), { email: user.email })).statusCode, 200)
    const limited = await send(app, 'POST', '/api/auth/request-password-reset', freshIp(), { email: user.email })
    t.equal(limited.statusCode, 429)
    t.ok(Number(limited.headers['retry-after']) > 60, 'the window is an hour')
    t.equal((await send(app, 'POST', '/api/auth/send-verification-email', freshIp(), { email: user.email })).statusCode, 429)
    t.equal(await tokens(), 2, 'no token beyond the budget')
    // A sign-in that must send a reset mail still answers, but sends nothing past the budget.
    await app.db.updateTable('user').set({ password_reset_required: true }).where('id', '=', user.id).execute()
    const signIn = await send(app, 'POST', '/api/auth/sign-in/email', freshIp(), { email: user.email, password: user.password })
    t.equal(signIn.statusCode, 403)
    t.match(signIn.json(), { code: 'PASSWORD_RESET_REQUIRED' })
    t.equal(await tokens(), 2)
    const unknown = uniqueEmail('nobody')
    t.equal((await send(app, 'POST', '/api/auth/request-password-reset', freshIp(), { email: unknown })).statusCode, 200)
    t.equal((await send(app, 'POST', '/api/auth/request-password-reset', freshIp(), { email: unknown })).statusCode, 200)
    t.equal(
      (await send(app, 'POST', '/api/auth/request-password-reset', freshIp(), { email: unknown })).statusCode,
      429,
      'an unknown email is throttled alike: the limit reveals no account',
    )
  })
})

redisTest('Redis store', 'the shared store is not tested', async (t, { url, prefix, redis }) => {
  const env = {
    REDIS_URL: url,
    REDIS_KEY_PREFIX: prefix,
    RATE_LIMIT_SIGN_IN_IP_PER_MINUTE: '3',
    RATE_LIMIT_MAIL_PER_HOUR: '2',
  }
  const a = await buildTestApp({ env })
  const b = await buildTestApp({ env })

  t.test('two instances share one sign-in budget', async (t) => {
    const ip = freshIp()
    const statuses: number[] = []
    for (let i = 0; i < 6; i++) {
      statuses.push(
        (await send(i % 2 ? a : b, 'POST', '/api/auth/sign-in/email', ip, { email: uniqueEmail(), password: PASSWORD }))
          .statusCode,
      )
    }
    t.same(statuses, [401, 401, 401, 429, 429, 429])
    t.ok((await redis.keys(`${prefix}*`)).length > 0, 'the counters live in Redis under the prefix')
  })

  t.test('two instances share one mail budget per email', async (t) => {
    const email = uniqueEmail('redis-mail')
    const statuses: number[] = []
    for (const app of [a, b, a, b])
      statuses.push((await send(app, 'POST', '/api/auth/request-password-reset', freshIp(), { email })).statusCode)
    t.same(statuses, [200, 200, 429, 429])
  })
})

t.test('a Redis that is down never takes the service down (limits are skipped meanwhile)', async (t) => {
  const app = await buildTestApp({
    env: { REDIS_URL: 'redis://127.0.0.1:1', RATE_LIMIT_GLOBAL_PER_MINUTE: '2', RATE_LIMIT_SIGN_IN_IP_PER_MINUTE: '1' },
  })
  const ip = freshIp()
  for (let i = 0; i < 4; i++) t.equal((await send(app, 'GET', '/api/auth/get-session', ip)).statusCode, 200)
  for (let i = 0; i < 2; i++) {
    t.equal(
      (await send(app, 'POST', '/api/auth/sign-in/email', ip, { email: uniqueEmail(), password: PASSWORD })).statusCode,
      401,
    )
  }
})

t.test('an IPv6 client is budgeted by its /64, an IPv4 one by its address', async (t) => {
  t.equal(clientKey('203.0.113.7'), '203.0.113.7')
  t.equal(clientKey('::ffff:203.0.113.7'), '203.0.113.7', 'IPv4-mapped is the IPv4 address')
  for (const ip of ['2001:db8:0:1::5', '2001:db8:0:1:ffff:1:2:3', '2001:0DB8:0000:0001::'])
    t.equal(clientKey(ip), '2001:db8:0:1::/64', ip)
  t.not(clientKey('2001:db8:0:2::5'), clientKey('2001:db8:0:1::5'), 'another /64 is another client')

  const app = await buildTestApp({ env: { RATE_LIMIT_SIGN_IN_IP_PER_MINUTE: '2' } })
  const statuses: number[] = []
  for (const suffix of ['1', '2', 'abcd', 'ffff:1']) {
    statuses.push(
      (
        await send(app, 'POST', '/api/auth/sign-in/email', `2001:db8:77:1::${suffix}`, {
          email: uniqueEmail(),
          password: PASSWORD,
        })
      ).statusCode,
    )
  }
  t.same(statuses, [401, 401, 429, 429], 'new addresses in the same /64 share one budget')
})
