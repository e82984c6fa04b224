// Re-verifying the current password (change-password, account deletion, two-factor changes) is
// limited per account: 5 attempts a minute, right answers included, then 429 RATE_LIMITED with
// Retry-After, counted across routes and, through Redis, across instances.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { buildTestApp, call, proveAddress, signUp, type TestUser } from '../helpers/app.js'
import { redisTest } from '../helpers/redis.js'

const NEW_PASSWORD = 'a brand new passphrase'

const changePassword = (app: FastifyInstance, user: TestUser, currentPassword: string) =>
  call(app, 'POST', '/api/auth/change-password', { cookie: user.cookie, body: { currentPassword, newPassword: NEW_PASSWORD } })
const deleteAccount = (app: FastifyInstance, user: TestUser, password: string) =>
  call(app, 'DELETE', '/api/v1/me', { cookie: user.cookie, body: { password } })

t.test('memory store', async (t) => {
  let offsetMs = 0
  const app = await buildTestApp({ deps: { clock: { now: () => new Date(Date.now() + offsetMs) } } })

  t.test('five wrong answers, then 429 even for the right password; the account is untouched', async (t) => {
    const user = await signUp(app)
    for (let i = 0; i < 5; i++) {
      const res = await changePassword(app, user, `wrong guess ${i}`)
      t.same([res.statusCode, res.json().code], [401, 'INVALID_PASSWORD'], `guess ${i + 1}`)
    }
    const limited = await changePassword(app, user, user.password)
    t.same([limited.statusCode, limited.json().code], [429, 'RATE_LIMITED'])
    const retryAfter = Number(limited.headers['retry-after'])
    t.ok(retryAfter > 0 && retryAfter <= 60, `Retry-After ${retryAfter}`)
    t.equal(
      (await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: user.email, password: NEW_PASSWORD } })).statusCode,
      401,
      'the password did not change',
    )
    t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: user.cookie })).statusCode, 200, 'the session is not harmed')
  })

  t.test('five right answers use up the budget as wrong ones do', async (t) => {
    const user = await signUp(app)
    await proveAddress(app, user.id)
    const enabled = await call(app, 'POST', '/api/auth/two-factor/enable', {
      cookie: user.cookie,
      body: { password: user.password },
    })
    t.equal(enabled.statusCode, 200, 'the first right answer (a pending setup)')
    const statuses: number[] = []
    for (let i = 0; i < 5; i++) {
      const res = await call(app, 'POST', '/api/auth/two-factor/get-totp-uri', {
        cookie: user.cookie,
        body: { password: user.password },
      })
      statuses.push(res.statusCode)
    }
    t.same(statuses, [200, 200, 200, 200, 429], 'the sixth right answer in the minute is refused')
  })

  t.test('a request refused before its password is looked at does not count', async (t) => {
    const user = await signUp(app)
    for (let i = 0; i < 6; i++) {
      const res = await deleteAccount(app, user, '')
      t.same([res.statusCode, res.json().code], [400, 'VALIDATION_ERROR'], `invalid input ${i + 1}`)
    }
    for (let i = 0; i < 5; i++) t.equal((await changePassword(app, user, `wrong ${i}`)).statusCode, 401, `attempt ${i + 1}`)
    t.equal((await changePassword(app, user, user.password)).statusCode, 429)
  })

  t.test('the count is per account and shared by every route that re-verifies', async (t) => {
    const user = await signUp(app)
    const other = await signUp(app)
    for (let i = 0; i < 3; i++) t.equal((await changePassword(app, user, `wrong ${i}`)).statusCode, 401)
    for (let i = 0; i < 2; i++) t.equal((await deleteAccount(app, user, `wrong ${i}`)).json().code, 'INVALID_PASSWORD')
    const limited = await deleteAccount(app, user, user.password)
    t.same([limited.statusCode, limited.json().code], [429, 'RATE_LIMITED'], 'deletion is refused: the account still exists')
    t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: user.cookie })).statusCode, 200)
    t.equal((await changePassword(app, other, other.password)).statusCode, 200, 'another account is free')
  })

  t.test('a burst of parallel guesses gets five answers, not one per request', async (t) => {
    const user = await signUp(app)
    const guesses = Array.from({ length: 20 }, (_, i) => (i === 12 ? user.password : `parallel guess ${i}`))
    const answers = await Promise.all(guesses.map((guess) => changePassword(app, user, guess)))
    const statuses = answers.map((r) => r.statusCode)
    t.equal(statuses.filter((s) => s === 429).length, 15, 'all but five are refused before any hash is checked')
    // The five are checked one at a time (the account's one hash in flight), each answered.
    t.equal(statuses.filter((s) => s === 401 || s === 200).length, 5)
  })

  t.test('right answers count too; the budget returns after the minute', async (t) => {
    const user = await signUp(app)
    for (let i = 0; i < 3; i++) t.equal((await changePassword(app, user, `wrong ${i}`)).statusCode, 401)
    const ok = await changePassword(app, user, user.password)
    t.equal(ok.statusCode, 200, 'a right answer within the budget passes')
    const moved = { ...user, password: NEW_PASSWORD }
    t.equal((await changePassword(app, moved, 'wrong again')).statusCode, 401, 'the fifth attempt')
    t.equal((await changePassword(app, moved, NEW_PASSWORD)).statusCode, 429, 'the sixth, right as it is')
    offsetMs += 61_000
    const after = await call(app, 'POST', '/api/auth/change-password', {
      cookie: user.cookie,
      body: { currentPassword: NEW_PASSWORD, newPassword: 'and yet another passphrase' },
    })
    t.equal(after.statusCode, 200, 'a minute later the account may try again')
  })
})

redisTest('Redis store: two instances share one count', 'the shared count is not tested', async (t, { url, prefix, redis }) => {
  const a = await buildTestApp({ env: { REDIS_URL: url, REDIS_KEY_PREFIX: prefix } })
  const b = await buildTestApp({ env: { REDIS_URL: url, REDIS_KEY_PREFIX: prefix } })
  const user = await signUp(a)
  const statuses: number[] = []
  for (let i = 0; i < 5; i++) statuses.push((await changePassword(i % 2 ? a : b, user, `wrong ${i}`)).statusCode)
  statuses.push((await changePassword(a, user, user.password)).statusCode)
  statuses.push((await changePassword(b, user, user.password)).statusCode)
  t.same(statuses, [401, 401, 401, 401, 401, 429, 429])
  t.ok((await redis.keys(`${prefix}rl:password-check:*`)).length === 1, 'the count lives in Redis under the prefix')
  const other = await signUp(a)
  const burst = await Promise.all(Array.from({ length: 12 }, (_, i) => changePassword(i % 2 ? a : b, other, `burst ${i}`)))
  t.equal(burst.filter((r) => r.statusCode === 429).length, 7, 'a burst spread over both instances gets five answers')
})
