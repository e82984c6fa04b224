// Rate limits: global per IP, sign-in per IP and per email, sign-up per IP, mail per email; in
// memory, shared through Redis when REDIS_URL is set, and, when Redis is down, counted in each
// instance's memory: still enforced, never an outage.
import type { AddressInfo } from 'node:net'
import { createORPCClient, ORPCError } from '@orpc/client'
import { RPCLink } from '@orpc/client/fetch'
import type { ContractRouterClient } from '@orpc/contract'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import type { AppDeps } from '../../src/app.js'
import { type BudgetCounter, MemoryCounter, RedisCounter, RedisOrMemory } from '../../src/plugins/budget-counter.js'
import { clientKey } from '../../src/plugins/rate-limit.js'
import type { contract } from '../../src/contract/index.js'
import { buildTestApp, signUp, uniqueEmail, WEB_ORIGIN } from '../helpers/app.js'
import { logLines } from '../helpers/log-lines.js'
import { redisTest } from '../helpers/redis.js'

const PASSWORD = 'correct horse battery staple'
let ipCounter = 1
const freshIp = () => `10.${process.pid % 250}.${Math.floor(ipCounter / 250)}.${ipCounter++ % 250}`

/** An instance whose Redis never answers (nothing listens on port 1), with these budgets. */
const withoutRedis = (env: Record<string, string>, deps?: Omit<AppDeps, 'database'>) =>
  buildTestApp({ env: { REDIS_URL: 'redis://127.0.0.1:1', ...env }, deps })

function send(app: FastifyInstance, method: 'GET' | 'POST', url: string, ip: string, body?: object) {
  return app.inject({ method, url, remoteAddress: ip, headers: { origin: WEB_ORIGIN }, ...(body ? { payload: body } : {}) })
}

t.test('memory counter: a fixed window per key from its first take, and a bounded number of keys', async (t) => {
  let now = 1_000_000
  const counter = new MemoryCounter(() => now, 3)
  const take = (key: string) => counter.take(key, 2, 60_000)
  t.same(take('a'), { allowed: true, remaining: 1, resetAt: 1_060_000 })
  t.same(take('a'), { allowed: true, remaining: 0, resetAt: 1_060_000 })
  now += 20_000
  t.same(take('a'), { allowed: false, remaining: 0, resetAt: 1_060_000 }, 'the third in the window, until its end (40 s)')
  t.same(take('b'), { allowed: true, remaining: 1, resetAt: 1_080_000 }, 'another key has its own window')
  now += 40_000
  t.same(take('a'), { allowed: true, remaining: 1, resetAt: 1_120_000 }, 'a new window once the old one ended')
  take('c')
  take('d') // a fourth key: the oldest window (b) is dropped
  t.same(take('b'), { allowed: true, remaining: 1, resetAt: 1_120_000 })
  t.same(take('b'), { allowed: true, remaining: 0, resetAt: 1_120_000 })
  t.same(take('b'), { allowed: false, remaining: 0, resetAt: 1_120_000 }, 'and b starts over (60 s)')
})

/** What both stores of the budget counter must do alike: the same takes get the same answers. */
async function counterContract(t: Test, counter: BudgetCounter, now: () => number, wait: (ms: number) => Promise<void>) {
  const WINDOW = 400
  const take = async (key: string, limit = 2) => counter.take(key, limit, WINDOW)
  const first = await take('a')
  t.same([first.allowed, first.remaining], [true, 1])
  t.ok(first.resetAt > now() && first.resetAt <= now() + WINDOW, 'the window ends within its length')
  const second = await take('a')
  t.match(second, { allowed: true, remaining: 0 })
  t.match(await take('a'), { allowed: false, remaining: 0 }, 'past the limit, refused')
  t.match(await take('a'), { allowed: false, remaining: 0 })
  await counter.refund('a', second)
  t.match(await take('a'), { allowed: true, remaining: 0 }, 'a refund frees one place, however many were refused')
  t.match(await take('a'), { allowed: false })
  t.match(await take('b'), { allowed: true, remaining: 1 }, 'another key has its own window')
  await counter.refund('never-taken', first)
  t.match(await take('never-taken', 1), { allowed: true }, 'a refund of nothing leaves nothing to spare')
  t.match(await take('never-taken', 1), { allowed: false })
  await wait(WINDOW + 50)
  await counter.refund('a', second) // its window has ended: nothing to give back
  t.match(await take('a'), { allowed: true, remaining: 1 }, 'a new window once the old one ended')
  await counter.refund('a', second) // a take of the ended window, given back while the next one runs
  t.match(await take('a'), { allowed: true, remaining: 0 })
  t.match(await take('a'), { allowed: false }, 'and a refund never reaches a later window')
}

t.test('the memory store keeps the counter contract', async (t) => {
  let now = 5_000_000
  await counterContract(
    t,
    new MemoryCounter(() => now),
    () => now,
    async (ms) => {
      now += ms
    },
  )
})

redisTest('the Redis store keeps the counter contract', 'its Lua script is not tested', async (t, { redis, prefix }) => {
  await counterContract(t, new RedisCounter(redis, prefix, Date.now), Date.now, (ms) => new Promise((r) => setTimeout(r, ms)))
  t.ok((await redis.keys(`${prefix}*`)).length > 0, 'its windows live in Redis under the prefix')
})

redisTest(
  "a Redis command that fails is counted in this instance's memory, and reported until Redis answers again",
  'the fallback of a failing command is not tested',
  async (t, { redis, prefix }) => {
    const failures: unknown[] = []
    const local = new MemoryCounter(Date.now)
    const watch = { fellBack: (err: unknown) => failures.push(err), answered: () => failures.splice(0) }
    const counter = new RedisOrMemory(redis, new RedisCounter(redis, prefix, Date.now), local, watch)
    // A list where a count should be, in its window: the script's GET fails on it.
    await redis.lpush(`${prefix}broken`, 'not a count')
    await redis.pexpire(`${prefix}broken`, 60_000)
    t.match(await counter.take('broken', 1, 60_000), { allowed: true })
    t.match(await counter.take('broken', 1, 60_000), { allowed: false }, 'the limit holds in memory')
    t.equal(failures.length, 2, 'each failure is reported (the plugin logs the first of an outage)')
    t.match(local.take('broken', 1, 60_000), { allowed: false }, 'the takes were counted in memory')
    t.match(await counter.take('working', 1, 60_000), { allowed: true })
    t.equal(failures.length, 0, 'an answer from Redis is reported too (the outage is over)')
  },
)

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

  t.test('a 429 says how long to wait: data.retryAfter, whole seconds, equal to Retry-After, in every protocol', async (t) => {
    const app = await buildTestApp({ env: { RATE_LIMIT_GLOBAL_PER_MINUTE: '3', RATE_LIMIT_SIGN_IN_IP_PER_MINUTE: '1' } })
    const waitOf = (t: Test, res: { headers: Record<string, unknown> }, data: unknown, name: string) => {
      const header = Number(res.headers['retry-after'])
      t.ok(Number.isInteger(header) && header >= 1 && header <= 60, `${name}: Retry-After ${header}`)
      t.same(data, { retryAfter: header }, `${name}: data.retryAfter is the header's seconds`)
    }

    const auth = freshIp()
    await send(app, 'POST', '/api/auth/sign-in/email', auth, { email: uniqueEmail(), password: PASSWORD })
    const signIn = await send(app, 'POST', '/api/auth/sign-in/email', auth, { email: uniqueEmail(), password: PASSWORD })
    t.match(signIn.json(), { code: 'RATE_LIMITED', status: 429 })
    waitOf(t, signIn, signIn.json().data, '/api/auth')

    const rest = freshIp()
    for (let i = 0; i < 3; i++) await send(app, 'GET', '/api/v1/profile', rest)
    const profile = await send(app, 'GET', '/api/v1/profile', rest)
    t.match(profile.json(), { code: 'RATE_LIMITED', status: 429, defined: false })
    waitOf(t, profile, profile.json().data, 'REST')

    // The RPC envelope, through oRPC's own client over a socket (the client's IP is 127.0.0.1).
    await app.listen({ port: 0, host: '127.0.0.1' })
    const api = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1`
    const client: ContractRouterClient<typeof contract> = createORPCClient(
      new RPCLink({ url: api, headers: { origin: WEB_ORIGIN } }),
    )
    for (let i = 0; i < 3; i++) await client.getProfile().catch(() => undefined)
    const raw = await fetch(`${api}/getProfile`, { method: 'POST', headers: { origin: WEB_ORIGIN } })
    t.equal(raw.status, 429)
    const envelope = (await raw.json()) as { json: { code: string; data: unknown } }
    t.equal(envelope.json.code, 'RATE_LIMITED')
    waitOf(t, { headers: { 'retry-after': raw.headers.get('retry-after') } }, envelope.json.data, 'RPC envelope')
    const refused = await client.getProfile().then(
      () => t.fail('the call succeeded'),
      (err: unknown) => err,
    )
    t.ok(refused instanceof ORPCError, 'RPCLink rejects with an ORPCError')
    t.match(refused, { code: 'RATE_LIMITED', status: 429, data: { retryAfter: Number } })
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

  t.test('mail: per address and client per hour, one budget for reset and verification mail, no cap on links', async (t) => {
    const app = await buildTestApp({ env: { RATE_LIMIT_MAIL_PER_HOUR: '2', RATE_LIMIT_MAIL_PER_ADDRESS_PER_HOUR: '3' } })
    const user = await signUp(app)
    // The mail routes write their token after the reply: wait for that work before counting.
    const tokens = async () => {
      await app.settled()
      return (await app.db.selectFrom('verification').select('id').where('user_id', '=', user.id).execute()).length
    }
    const stranger = freshIp()
    t.equal((await send(app, 'POST', '/api/auth/request-password-reset', stranger, { email: user.email })).statusCode, 200)
    t.equal((await send(app, 'POST', '/api/auth/send-verification-email', stranger, { email: user.email })).statusCode, 200)
    const limited = await send(app, 'POST', '/api/auth/request-password-reset', stranger, { email: user.email })
    t.equal(limited.statusCode, 429)
    t.ok(Number(limited.headers['retry-after']) > 60, 'the window is an hour')
    t.equal((await send(app, 'POST', '/api/auth/send-verification-email', stranger, { email: user.email })).statusCode, 429)
    t.equal(await tokens(), 2, 'no token beyond the budget')
    // A sign-in that must send a reset mail still answers, but sends nothing past the budget.
    await app.db.updateTable('user').set({ password_reset_required: true }).where('id', '=', user.id).execute()
    const signIn = await send(app, 'POST', '/api/auth/sign-in/email', stranger, { email: user.email, password: user.password })
    t.equal(signIn.statusCode, 403)
    t.match(signIn.json(), { code: 'PASSWORD_RESET_REQUIRED' })
    t.equal(await tokens(), 2)

    // What a stranger spent is not the owner's: another client still gets its links, and links are
    // held to no cap of the address (nobody can guess or spend another's link).
    for (let i = 0; i < 4; i++) {
      const res = await send(app, 'POST', '/api/auth/request-password-reset', freshIp(), { email: user.email })
      t.equal(res.statusCode, 200, `another client's link ${i + 1}`)
    }
    t.equal(await tokens(), 6, "the owner's mail was sent")

    const unknown = uniqueEmail('nobody')
    const from = freshIp()
    t.equal((await send(app, 'POST', '/api/auth/request-password-reset', from, { email: unknown })).statusCode, 200)
    t.equal((await send(app, 'POST', '/api/auth/request-password-reset', from, { email: unknown })).statusCode, 200)
    t.equal(
      (await send(app, 'POST', '/api/auth/request-password-reset', from, { email: unknown })).statusCode,
      429,
      'an unknown email is throttled alike: the limit reveals no account',
    )
  })

  /** A code mailed to `email` for the client `ip` (with the browser's cookie when given). */
  const askCode = (app: FastifyInstance, email: string, ip: string, cookie?: string) =>
    app.inject({
      method: 'POST',
      url: '/api/auth/email-otp/send-verification-otp',
      remoteAddress: ip,
      headers: { origin: WEB_ORIGIN, ...(cookie ? { cookie } : {}) },
      payload: { email, type: 'sign-in' },
    })

  t.test("codes: the owner's browser is not held to the address's cap, only to its client's allowance", async (t) => {
    const app = await buildTestApp({ env: { RATE_LIMIT_MAIL_PER_HOUR: '1', RATE_LIMIT_MAIL_PER_ADDRESS_PER_HOUR: '1' } })
    const owner = await signUp(app)
    const other = await signUp(app)
    /** The device cookie a sign-in leaves in the browser, as the browser sends it back. */
    const deviceOf = async (user: { email: string; password: string }) => {
      const res = await send(app, 'POST', '/api/auth/sign-in/email', freshIp(), { email: user.email, password: user.password })
      t.equal(res.statusCode, 200)
      await app.settled()
      const set = ([] as string[]).concat(res.headers['set-cookie'] ?? [])
      return set.find((c) => c.startsWith('insight.device='))!.split(';', 1)[0]!
    }
    const ownersBrowser = await deviceOf(owner)
    const othersBrowser = await deviceOf(other)
    const code = (ip: string, cookie?: string) => askCode(app, owner.email, ip, cookie)
    t.equal((await code(freshIp())).statusCode, 200, 'a stranger spends the cap')
    t.equal((await code(freshIp())).statusCode, 429, 'the cap holds for strangers')
    t.equal((await code(freshIp(), othersBrowser)).statusCode, 429, "another account's browser is a stranger here")
    t.equal(
      (await code(freshIp(), `insight.device=${'a'.repeat(43)}`)).statusCode,
      429,
      'an unsigned device cookie proves nothing',
    )
    const home = freshIp()
    t.equal((await code(home, ownersBrowser)).statusCode, 200, "the owner's browser still gets its code")
    t.equal((await code(home, ownersBrowser)).statusCode, 429, "within its client's allowance")
    const link = await send(app, 'POST', '/api/auth/request-password-reset', freshIp(), { email: owner.email })
    t.equal(link.statusCode, 200, 'links are not held to the cap of codes')
  })

  t.test("codes: a client refused by the address's cap keeps its own allowance", async (t) => {
    let now = Date.now()
    const app = await buildTestApp({
      env: { RATE_LIMIT_MAIL_PER_HOUR: '1', RATE_LIMIT_MAIL_PER_ADDRESS_PER_HOUR: '1', RATE_LIMIT_CODES_PER_CLIENT_PER_DAY: '1' },
      deps: { clock: { now: () => new Date(now) } },
    })
    const email = uniqueEmail('cap')
    const late = freshIp()
    t.equal((await askCode(app, email, freshIp())).statusCode, 200, "the cap's hour starts")
    now += 30 * 60_000
    t.equal((await askCode(app, email, late)).statusCode, 429, 'the cap is spent')
    now += 31 * 60_000
    t.equal(
      (await askCode(app, email, late)).statusCode,
      200,
      "the cap's hour is over, and the refused client had spent neither its hour's nor its day's allowance",
    )
  })

  t.test('codes: a cap per address and day over every client the account does not know', async (t) => {
    let now = Date.now()
    const app = await buildTestApp({
      env: { RATE_LIMIT_MAIL_PER_ADDRESS_PER_HOUR: '2', RATE_LIMIT_CODES_PER_ADDRESS_PER_DAY: '3' },
      deps: { clock: { now: () => new Date(now) } },
    })
    const email = uniqueEmail('day')
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) {
      statuses.push((await askCode(app, email, freshIp())).statusCode)
      now += 31 * 60_000
    }
    t.same(statuses, [200, 200, 200, 429], 'three a day')
    now += 24 * 60 * 60_000
    t.equal((await askCode(app, email, freshIp())).statusCode, 200, 'the next day')
  })
})

redisTest('Redis store', 'the shared store is not tested', async (t, { url, prefix, redis }) => {
  const env = {
    REDIS_URL: url,
    REDIS_KEY_PREFIX: prefix,
    RATE_LIMIT_SIGN_IN_IP_PER_MINUTE: '3',
    RATE_LIMIT_SIGN_IN_EMAIL_PER_MINUTE: '3',
    RATE_LIMIT_MAIL_PER_HOUR: '2',
    RATE_LIMIT_MAIL_PER_ADDRESS_PER_HOUR: '3',
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

  t.test('two instances share one mail budget per address and client, and the cap of codes per address', async (t) => {
    const email = uniqueEmail('redis-mail')
    const ip = freshIp()
    const code = (app: FastifyInstance, from: string) =>
      send(app, 'POST', '/api/auth/email-otp/send-verification-otp', from, { email, type: 'sign-in' })
    const statuses: number[] = []
    for (const app of [a, b, a, b]) statuses.push((await code(app, ip)).statusCode)
    t.same(statuses, [200, 200, 429, 429])
    const others: number[] = []
    for (const app of [a, b, a]) others.push((await code(app, freshIp())).statusCode)
    t.same(others, [200, 429, 429], 'three codes an hour to the address from every client')
  })

  t.test("two instances share the sign-in budgets split by client and the known browser's own", async (t) => {
    const user = await signUp(a)
    const guesser = freshIp()
    const statuses: number[] = []
    for (const app of [a, b, a]) {
      statuses.push(
        (await send(app, 'POST', '/api/auth/sign-in/email', guesser, { email: user.email, password: 'wrong' })).statusCode,
      )
    }
    t.same(statuses, [401, 401, 429], 'one client: half the pool of 3, rounded up')
    t.equal(
      (await send(b, 'POST', '/api/auth/sign-in/email', freshIp(), { email: user.email, password: 'wrong' })).statusCode,
      401,
    )
    t.equal(
      (await send(a, 'POST', '/api/auth/sign-in/email', freshIp(), { email: user.email, password: user.password })).statusCode,
      429,
      'the pool of unknown clients is spent, on both instances',
    )
    const known = await b.inject({
      method: 'POST',
      url: '/api/auth/sign-in/email',
      remoteAddress: freshIp(),
      headers: { origin: WEB_ORIGIN, cookie: user.cookie },
      payload: { email: user.email, password: user.password },
    })
    t.equal(known.statusCode, 429, 'a session cookie alone is not a known browser')
  })
})

t.test("Redis unreachable: every route budget is counted in this instance's memory, logged once, never an outage", async (t) => {
  const { stream: logStream, lines } = logLines()
  const app = await withoutRedis(
    {
      LOG_LEVEL: 'warn',
      RATE_LIMIT_GLOBAL_PER_MINUTE: '3',
      RATE_LIMIT_SIGN_IN_IP_PER_MINUTE: '1',
      RATE_LIMIT_SIGN_IN_EMAIL_PER_MINUTE: '1',
      RATE_LIMIT_SIGN_UP_IP_PER_MINUTE: '1',
      RATE_LIMIT_MAIL_PER_HOUR: '1',
      RATE_LIMIT_MAIL_PER_ADDRESS_PER_HOUR: '1',
    },
    { logStream },
  )
  const refused = (res: { statusCode: number; json(): unknown; headers: Record<string, unknown> }, what: string) => {
    t.equal(res.statusCode, 429, what)
    t.match(res.json(), { code: 'RATE_LIMITED' })
    t.ok(Number(res.headers['retry-after']) > 0, 'with Retry-After')
  }

  const ip = freshIp()
  for (let i = 0; i < 3; i++) t.equal((await send(app, 'GET', '/api/auth/get-session', ip)).statusCode, 200)
  refused(await send(app, 'GET', '/api/auth/get-session', ip), 'the global budget')

  const signInIp = freshIp()
  const signIn = (from: string, email: string) =>
    send(app, 'POST', '/api/auth/sign-in/email', from, { email, password: PASSWORD })
  t.equal((await signIn(signInIp, uniqueEmail())).statusCode, 401)
  refused(await signIn(signInIp, uniqueEmail()), 'the sign-in budget per IP')

  const email = uniqueEmail('down')
  t.equal((await signIn(freshIp(), email)).statusCode, 401)
  refused(await signIn(freshIp(), email), 'the sign-in budget per email')

  const signUpIp = freshIp()
  const signUpFrom = () =>
    send(app, 'POST', '/api/auth/sign-up/email', signUpIp, { name: 'N', email: uniqueEmail(), password: PASSWORD })
  t.equal((await signUpFrom()).statusCode, 200, 'a sign-up works without Redis')
  refused(await signUpFrom(), 'the sign-up budget per IP')

  const code = (from: string) => send(app, 'POST', '/api/auth/email-otp/send-verification-otp', from, { email, type: 'sign-in' })
  const mailFrom = freshIp()
  t.equal((await code(mailFrom)).statusCode, 200)
  refused(await code(mailFrom), 'the mail budget per address and client')
  refused(await code(freshIp()), 'the cap of codes per address')

  t.equal(lines.filter((l) => l.includes('redis unavailable')).length, 1, 'the outage is logged once, not per request')
})

t.test("Redis unreachable: the password re-check and Argon2 budgets are counted in this instance's memory", async (t) => {
  const app = await withoutRedis({
    RATE_LIMIT_PASSWORD_CHECKS_PER_MINUTE: '1',
    RATE_LIMIT_HASHES_PER_ACCOUNT_PER_MINUTE: '1',
    RATE_LIMIT_HASHES_PER_IP_PER_MINUTE: '3',
  })
  const user = await signUp(app) // counted for the address: there was no account yet
  const deleteUser = () =>
    app.inject({
      method: 'POST',
      url: '/api/auth/delete-user',
      remoteAddress: freshIp(),
      headers: { origin: WEB_ORIGIN, cookie: user.cookie },
      payload: { password: 'not the password' },
    })
  t.match(
    (await deleteUser()).json(),
    { code: 'INVALID_PASSWORD' },
    "a re-check: the account's one Argon2 operation in the minute",
  )
  const recheck = await deleteUser()
  t.same([recheck.statusCode, recheck.json().code], [429, 'RATE_LIMITED'], 'the re-check budget per account')

  const right = await send(app, 'POST', '/api/auth/sign-in/email', freshIp(), { email: user.email, password: user.password })
  t.same([right.statusCode, right.json().code], [429, 'RATE_LIMITED'], 'the Argon2 budget per account, right answer or not')

  const hashIp = freshIp()
  const statuses: number[] = []
  for (let i = 0; i < 4; i++)
    statuses.push(
      (await send(app, 'POST', '/api/auth/sign-in/email', hashIp, { email: uniqueEmail(), password: PASSWORD })).statusCode,
    )
  t.same(statuses, [401, 401, 401, 429], 'the Argon2 budget per IP')
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
