// Every Argon2 operation counts against budgets, per account and per client address, right answers
// included; an account has at most one in flight; and the hash queue takes turns by client address.
// So one account, or one address with many accounts, cannot keep the hash workers to itself: under
// its flood everyone else's sign-in still gets in, and the flood itself is refused with 429 (or its
// own surplus shed with 503), never everyone else's.
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import t from 'tap'
import { newId } from '../../src/shared/ids.js'
import { buildTestApp, proveAddress, sessionCookieOf, signUp, type TestUser, WEB_ORIGIN } from '../helpers/app.js'
import { redisTest } from '../helpers/redis.js'
import { linkIn, startSmtpServer } from '../helpers/smtp.js'

const PASSWORD = 'correct horse battery staple'
/** One hash worker and a short queue: a flood fills them at once. */
const ONE_WORKER_SHORT_QUEUE = { HASH_MAX_CONCURRENCY: '1', HASH_MAX_QUEUE: '8' }

/** A request from the web front end on client address `ip`, with the session cookie when given. */
function from(app: FastifyInstance, ip: string, url: string, body: unknown, cookie?: string): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { origin: WEB_ORIGIN }
  if (cookie) headers.cookie = cookie
  return app.inject({ method: 'POST', url, remoteAddress: ip, headers, payload: body as object })
}

const signIn = (app: FastifyInstance, ip: string, email: string, password: string) =>
  from(app, ip, '/api/auth/sign-in/email', { email, password })

/** The most hashes the pool held at once (running and waiting) while `work` ran, sampled every millisecond. */
async function peakInFlight<T>(app: FastifyInstance, work: () => Promise<T>): Promise<{ peak: number; result: T }> {
  let peak = 0
  const sample = () => {
    peak = Math.max(peak, app.hasher.pool.inFlight)
  }
  const timer = setInterval(sample, 1)
  try {
    const result = await work()
    return { peak, result }
  } finally {
    clearInterval(timer)
    sample()
  }
}

/**
 * A sustained flood, as over the network: `total` requests, `outstanding` of them in flight at any
 * time (each answer sends the next). `during` runs once `after` answers are back, the flood still
 * going; its outcome is returned with every answer of the flood.
 */
async function flood<T>(
  send: (i: number) => Promise<LightMyRequestResponse>,
  options: { total: number; outstanding: number; after: number },
  during: () => Promise<T>,
): Promise<{ answers: LightMyRequestResponse[]; outcome: T }> {
  const answers: LightMyRequestResponse[] = []
  let sent = 0
  let startDuring!: () => void
  const ready = new Promise<void>((resolve) => {
    startDuring = resolve
  })
  const lane = async () => {
    while (sent < options.total) {
      answers.push(await send(sent++))
      if (answers.length >= options.after) startDuring()
    }
  }
  const lanes = Promise.all(Array.from({ length: options.outstanding }, lane))
  await ready
  const outcome = await during()
  await lanes
  return { answers, outcome }
}

const count = (responses: LightMyRequestResponse[], status: number) => responses.filter((r) => r.statusCode === status).length

t.test('one account flooding right password re-checks cannot starve anyone else', async (t) => {
  // An operator raised the re-check budget (the hash budgets keep their defaults).
  const app = await buildTestApp({
    env: {
      ...ONE_WORKER_SHORT_QUEUE,
      RATE_LIMIT_PASSWORD_CHECKS_PER_MINUTE: '1000000',
      RATE_LIMIT_HASHES_PER_ACCOUNT_PER_MINUTE: '10',
      RATE_LIMIT_HASHES_PER_IP_PER_MINUTE: '30',
    },
  })
  const flooder = await signUp(app)
  await proveAddress(app, flooder.id)
  const enabled = await from(app, '10.0.0.1', '/api/auth/two-factor/enable', { password: PASSWORD }, flooder.cookie)
  t.equal(enabled.statusCode, 200, 'a pending setup, so get-totp-uri answers 200 to the right password')
  const other = await signUp(app)

  const { peak, result } = await peakInFlight(app, async () => {
    const { answers, outcome } = await flood(
      () => from(app, '10.0.0.1', '/api/auth/two-factor/get-totp-uri', { password: PASSWORD }, flooder.cookie),
      { total: 300, outstanding: 50, after: 30 },
      () => signIn(app, '10.0.0.2', other.email, PASSWORD),
    )
    return { flood: answers, otherSignIn: outcome }
  })

  t.equal(result.otherSignIn.statusCode, 200, 'the other person signs in during the flood')
  const statuses = [...new Set(result.flood.map((r) => r.statusCode))].sort()
  t.same(
    result.flood.filter((r) => r.statusCode !== 200 && r.statusCode !== 429).map((r) => r.statusCode),
    [],
    `the flood gets right answers and 429s, never a 503 (statuses: ${statuses})`,
  )
  t.ok(count(result.flood, 200) >= 1, 'some of its right answers are answered')
  t.ok(count(result.flood, 429) >= 200, `most of the flood is refused with 429 (${count(result.flood, 429)})`)
  for (const refused of result.flood.filter((r) => r.statusCode === 429).slice(0, 3)) {
    t.match(refused.json(), { code: 'RATE_LIMITED', status: 429 })
    t.ok(Number(refused.headers['retry-after']) >= 1, 'with Retry-After')
  }
  t.ok(peak <= 2, `at most one hash of the flooding account in the pool at once, plus the other sign-in (peak ${peak})`)
})

t.test('sign-ins for many addresses from one client address do not shut out another address', async (t) => {
  const app = await buildTestApp({ env: ONE_WORKER_SHORT_QUEUE })
  const other = await signUp(app)
  const { answers, outcome: otherSignIn } = await flood(
    (i) => signIn(app, '10.0.1.1', `nobody-${i}-${newId()}@example.com`, PASSWORD),
    { total: 200, outstanding: 40, after: 30 },
    () => signIn(app, '10.0.1.2', other.email, PASSWORD),
  )
  t.equal(otherSignIn.statusCode, 200, "the other address's sign-in gets its turn")
  t.same(
    answers.filter((r) => r.statusCode !== 401 && r.statusCode !== 503).map((r) => r.statusCode),
    [],
    'the flood gets its 401s, and its surplus is shed with 503',
  )
  t.ok(count(answers, 503) > 0, 'the flooding address fills the queue with its own work only')
})

t.test('every Argon2 operation counts against the account, right answers included', async (t) => {
  let offsetMs = 0
  const app = await buildTestApp({
    env: { RATE_LIMIT_HASHES_PER_ACCOUNT_PER_MINUTE: '3' },
    deps: { clock: { now: () => new Date(Date.now() + offsetMs) } },
  })
  const user = await signUp(app)
  for (let i = 0; i < 3; i++) {
    t.equal(
      (await signIn(app, `10.0.2.${i}`, user.email, PASSWORD)).statusCode,
      200,
      `right answer ${i + 1}, from its own address`,
    )
  }
  const fourth = await signIn(app, '10.0.2.9', user.email, PASSWORD)
  t.same([fourth.statusCode, fourth.json().code], [429, 'RATE_LIMITED'], 'the fourth in the minute, from yet another address')
  const recheck = await from(app, '10.0.2.9', '/api/auth/delete-user', { password: PASSWORD }, user.cookie)
  t.equal(recheck.statusCode, 429, 'a re-check of the password takes from the same budget: the account is still there')
  t.ok(await app.db.selectFrom('user').select('id').where('id', '=', user.id).executeTakeFirst())

  const unknown = `nobody-${newId()}@example.com`
  const unknownAnswers: number[] = []
  for (let i = 0; i < 4; i++) unknownAnswers.push((await signIn(app, '10.0.3.1', unknown, PASSWORD)).statusCode)
  t.same(unknownAnswers, [401, 401, 401, 429], 'an address without an account is counted the same way, per client')
  const elsewhere = await signIn(app, '10.0.3.2', unknown, PASSWORD)
  t.equal(elsewhere.statusCode, 401, "another client's operations for that address are its own (the sign-in pool caps them)")

  offsetMs += 61_000
  t.equal((await signIn(app, '10.0.2.9', user.email, PASSWORD)).statusCode, 200, 'a minute later the account may sign in')
})

t.test('every Argon2 operation counts against the client address, whatever the route', async (t) => {
  const app = await buildTestApp({ env: { RATE_LIMIT_HASHES_PER_IP_PER_MINUTE: '4' } })
  const ip = '10.0.4.1'
  const email = `ip-${newId()}@example.com`.toLowerCase()
  const up = await from(app, ip, '/api/auth/sign-up/email', { name: 'Ip Budget', email, password: PASSWORD })
  t.equal(up.statusCode, 200, 'a sign-up: one hash')
  const cookie = sessionCookieOf(up)!
  t.equal((await signIn(app, ip, email, PASSWORD)).statusCode, 200, 'a right sign-in: one more')
  t.equal((await signIn(app, ip, `nobody-${newId()}@example.com`, PASSWORD)).statusCode, 401, 'an unknown address: one more')
  const wrong = await from(app, ip, '/api/auth/delete-user', { password: 'not the password' }, cookie)
  t.equal(wrong.json().code, 'INVALID_PASSWORD', 'a wrong re-check: the fourth')
  const fifth = await signIn(app, ip, email, PASSWORD)
  t.same([fifth.statusCode, fifth.json().code], [429, 'RATE_LIMITED'], 'the fifth operation from that address is refused')
  t.equal((await signIn(app, '10.0.4.2', email, PASSWORD)).statusCode, 200, 'another address is free')
})

t.test('parallel uses of one reset link hash one at a time', async (t) => {
  const smtp = await startSmtpServer()
  const app = await buildTestApp({
    env: { SMTP_URL: smtp.url, HASH_MAX_CONCURRENCY: '1', RATE_LIMIT_HASHES_PER_ACCOUNT_PER_MINUTE: '10' },
  })
  const user: TestUser = await signUp(app)
  await from(app, '10.0.5.1', '/api/auth/request-password-reset', { email: user.email })
  const token = linkIn(await smtp.inbox.next(user.email)).searchParams.get('token')!
  const { peak, result } = await peakInFlight(app, () =>
    Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        from(app, `10.0.5.${i + 2}`, '/api/auth/reset-password', { token, newPassword: `a new passphrase number ${i}` }),
      ),
    ),
  )
  t.equal(count(result, 200), 1, 'one reset takes')
  t.same(
    result.filter((r) => r.statusCode !== 200).map((r) => r.json().code),
    result.filter((r) => r.statusCode !== 200).map((r) => (r.statusCode === 429 ? 'RATE_LIMITED' : 'INVALID_TOKEN')),
    'the others are refused: past the budget, or the link is used by then',
  )
  t.equal(count(result, 429), 10, "past the account's budget of 10, refused at once; the ten within it wait in line")
  t.ok(peak <= 1, `never more than one hash for the account at once (peak ${peak})`)
})

redisTest(
  'Redis store: two instances share the budgets',
  'the shared hash budgets are not tested',
  async (t, { url, prefix, redis }) => {
    const env = { REDIS_URL: url, REDIS_KEY_PREFIX: prefix, RATE_LIMIT_HASHES_PER_ACCOUNT_PER_MINUTE: '3' }
    const a = await buildTestApp({ env })
    const b = await buildTestApp({ env })
    const user = await signUp(a)
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) statuses.push((await signIn(i % 2 ? a : b, `10.0.6.${i}`, user.email, PASSWORD)).statusCode)
    t.same(statuses, [200, 200, 200, 429], 'three right answers in the minute, whichever instance answers')
    t.ok((await redis.keys(`${prefix}rl:hash:account:*`)).length >= 1, 'the count lives in Redis under the prefix')
    t.ok((await redis.keys(`${prefix}rl:hash:ip:*`)).length >= 1)
  },
)
