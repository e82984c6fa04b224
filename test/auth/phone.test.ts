// Sign-in by a code sent to a phone number (PHONE_SIGN_IN), driven by better-auth's own
// phoneNumberClient() over a real socket, on a clock the test moves. The development sender writes
// each code to the app's log: the test reads it there.
import { createAuthClient } from 'better-auth/client'
import { phoneNumberClient } from 'better-auth/client/plugins'
import t from 'tap'
import { buildTestApp, call, sessionCookieOf, signUp, type TestUser } from '../helpers/app.js'
import { cookieJarFetch } from '../helpers/auth-client.js'
import { auditEvents } from '../helpers/expect.js'
import { logLines } from '../helpers/log-lines.js'
import { CHALLENGE, enableTotp, SESSION, verificationIds } from '../helpers/two-factor.js'

let offsetMs = 0
const clock = { now: () => new Date(Date.now() + offsetMs) }
const log = logLines()
const app = await buildTestApp({
  env: { PHONE_SIGN_IN: 'true', LOG_LEVEL: 'info' },
  deps: { clock, logStream: log.stream },
})
await app.listen({ port: 0, host: '127.0.0.1' })
const baseURL = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
const LAST_LOGIN = 'better-auth.last_used_login_method'

/** A browser with better-auth's client and phoneNumberClient(); `user`'s session in its jar when given. */
function browser(user?: TestUser) {
  const { jar, fetch: customFetchImpl } = cookieJarFetch('follow')
  if (user) jar.set(SESSION, user.cookie.slice(user.cookie.indexOf('=') + 1))
  const client = createAuthClient({ baseURL, plugins: [phoneNumberClient()], fetchOptions: { customFetchImpl } })
  return { client, jar, cookie: () => `${SESSION}=${jar.get(SESSION)}` }
}

let numbers = 0
const newNumber = () => `+62812${String(process.pid % 10_000).padStart(4, '0')}${String(numbers++).padStart(3, '0')}`

/** Waits for the texts sent after the answers so far. */
const settled = () => (app as unknown as { settled: () => Promise<void> }).settled()

/** The codes the log sender wrote for `phoneNumber`, oldest first. */
async function codesTo(phoneNumber: string): Promise<string[]> {
  await settled()
  return log.lines
    .map((line) => JSON.parse(line) as { phoneCode?: { phoneNumber: string; code: string } })
    .filter((entry) => entry.phoneCode?.phoneNumber === phoneNumber)
    .map((entry) => entry.phoneCode!.code)
}
const lastCodeTo = async (phoneNumber: string) => (await codesTo(phoneNumber)).at(-1)!
const wrong = (code: string, n = 1) => String((Number(code) + n) % 1_000_000).padStart(6, '0')

const verify = (body: Record<string, unknown>, cookie?: string) =>
  call(app, 'POST', '/api/auth/phone-number/verify', { body, ...(cookie ? { cookie } : {}) })
const send = (phoneNumber: unknown, cookie?: string) =>
  call(app, 'POST', '/api/auth/phone-number/send-otp', { body: { phoneNumber }, ...(cookie ? { cookie } : {}) })

/** A member with `phoneNumber` attached and verified, through the client in their own session. */
async function withNumber(phoneNumber = newNumber()) {
  const user = await signUp(app)
  const b = browser(user)
  const sent = await b.client.phoneNumber.sendOtp({ phoneNumber })
  if (sent.error) throw new Error(JSON.stringify(sent.error))
  const code = await lastCodeTo(phoneNumber)
  const attached = await b.client.phoneNumber.verify({ phoneNumber, code, updatePhoneNumber: true })
  if (attached.error) throw new Error(JSON.stringify(attached.error))
  return { user, phoneNumber, attached: attached.data }
}

t.test('a signed-in member attaches a number with a code sent to it; it shows in their security activity', async (t) => {
  const { user, phoneNumber, attached } = await withNumber()
  t.match(attached, { status: true, token: null, user: { id: user.id, phoneNumber, phoneNumberVerified: true } })
  const row = await app.db
    .selectFrom('user')
    .select(['phone_number', 'phone_number_verified'])
    .where('id', '=', user.id)
    .executeTakeFirstOrThrow()
  t.same(row, { phone_number: phoneNumber, phone_number_verified: true })
  t.equal((await auditEvents(app.db, { action: 'auth.phone_number_added', targetId: user.id })).length, 1, 'audited')
  const events = (await call(app, 'GET', '/api/v1/me/security-events?limit=100', { cookie: user.cookie })).json()
  t.ok(
    events.items.some((e: { kind: string }) => e.kind === 'phone_number_added'),
    'shown as phone_number_added',
  )
  t.same(await verificationIds(app, user.id, 'phone-code'), [], 'the code is spent')
})

t.test('send-otp and verify sign in through phoneNumberClient: one session, born through the sign-in step', async (t) => {
  const { user, phoneNumber } = await withNumber()
  const b = browser()
  const sent = await b.client.phoneNumber.sendOtp({ phoneNumber })
  t.same([sent.error, sent.data], [null, { message: 'code sent' }])
  const verified = await b.client.phoneNumber.verify({ phoneNumber, code: await lastCodeTo(phoneNumber) })
  t.equal(verified.error, null, JSON.stringify(verified.error))
  t.match(verified.data, { status: true, token: null, user: { id: user.id, email: user.email, phoneNumber } })
  t.ok(b.jar.get(SESSION), 'a session cookie')
  t.equal(b.jar.get(LAST_LOGIN), 'phone-number', 'the method in the last-login-method cookie')
  const session = await b.client.getSession()
  t.equal(session.data?.user.id, user.id, 'get-session shows the account')
  const signIns = await auditEvents(app.db, { action: 'auth.sign_in', actorId: user.id })
  t.match(signIns.at(-1)?.details, { method: 'phone-number' }, 'auth.sign_in, with the method')
  const again = await b.client.phoneNumber.verify({ phoneNumber, code: await lastCodeTo(phoneNumber) })
  t.equal(again.error?.code, 'INVALID_OTP', 'a code works once')
})

t.test('a wrong code, an expired one, the fourth try, bad input', async (t) => {
  const { phoneNumber } = await withNumber()
  await send(phoneNumber)
  let code = await lastCodeTo(phoneNumber)
  const b = browser()
  const wrongOnce = await b.client.phoneNumber.verify({ phoneNumber, code: wrong(code) })
  t.same([wrongOnce.error?.status, wrongOnce.error?.code], [400, 'INVALID_OTP'])
  t.notOk(b.jar.get(SESSION), 'no session')
  for (const n of [2, 3]) t.equal((await verify({ phoneNumber, code: wrong(code, n) })).json().code, 'INVALID_OTP')
  const fourth = await verify({ phoneNumber, code })
  t.same([fourth.statusCode, fourth.json().code], [403, 'TOO_MANY_ATTEMPTS'], 'the right code, after three wrong tries')
  t.equal((await verify({ phoneNumber, code })).json().code, 'INVALID_OTP', 'and the code is gone')

  await send(phoneNumber)
  code = await lastCodeTo(phoneNumber)
  offsetMs += 5 * 60_000 + 1000
  const expired = await verify({ phoneNumber, code })
  offsetMs -= 5 * 60_000 + 1000
  t.same([expired.statusCode, expired.json().code], [400, 'OTP_EXPIRED'])

  for (const bad of ['0812345678', '+0812345678', '+62 812 345', '+1234567', `+${'1'.repeat(16)}`]) {
    const res = await send(bad)
    t.same([res.statusCode, res.json().code], [400, 'INVALID_PHONE_NUMBER'], `send-otp ${bad}`)
    t.equal((await verify({ phoneNumber: bad, code: '123456' })).json().code, 'INVALID_PHONE_NUMBER', `verify ${bad}`)
  }
  for (const body of [
    { phoneNumber, code: '12345' },
    { phoneNumber, code: 'abcdef' },
    { phoneNumber, code: '123456', name: 'extra' },
    { phoneNumber: 'x'.repeat(33), code: '123456' },
    { code: '123456' },
  ]) {
    t.equal((await verify(body)).statusCode, 400, `verify ${JSON.stringify(body).slice(0, 60)}`)
  }
  t.equal((await call(app, 'POST', '/api/auth/phone-number/send-otp', { body: { phoneNumber, type: 'x' } })).statusCode, 400)
})

t.test('an unknown number: the same answer, nothing sent, no sign-in and no account made', async (t) => {
  const phoneNumber = newNumber()
  const res = await send(phoneNumber)
  t.same([res.statusCode, res.json()], [200, { message: 'code sent' }])
  t.same(await codesTo(phoneNumber), [], 'nothing sent to a number nobody has, to a signed-out caller')
  const signIn = await verify({ phoneNumber, code: '123456' })
  t.same([signIn.statusCode, signIn.json().code], [400, 'INVALID_OTP'])
  t.notOk(sessionCookieOf(signIn))
  const rows = await app.db.selectFrom('user').select('id').where('phone_number', '=', phoneNumber).execute()
  t.same(rows, [], 'no account is made by phone')
})

t.test('a code sent for attaching, or to another account, signs nothing in and attaches nothing', async (t) => {
  const alice = await signUp(app)
  const phoneNumber = newNumber()
  await send(phoneNumber, alice.cookie)
  const code = await lastCodeTo(phoneNumber)
  t.equal((await verify({ phoneNumber, code })).json().code, 'INVALID_OTP', 'not yet a way in: no sign-in')
  const { phoneNumber: bobs } = await withNumber()
  await send(bobs, alice.cookie)
  const taken = await verify({ phoneNumber: bobs, code: await lastCodeTo(bobs), updatePhoneNumber: true }, alice.cookie)
  t.same([taken.statusCode, taken.json().code], [400, 'PHONE_NUMBER_EXIST'], "another account's number")
  const noSession = await verify({ phoneNumber, code, updatePhoneNumber: true })
  t.same([noSession.statusCode, noSession.json().code], [401, 'UNAUTHORIZED'], 'attaching needs a session')
})

t.test('a guest texts no one and attaches no number: a guest has no way in but its session', async (t) => {
  // Anyone makes a guest with one request: texts sent for it would let strangers make the service
  // pay for texts to any number, and a number attached would be a way in to a guest.
  const made = await call(app, 'POST', '/api/auth/sign-in/anonymous', { body: {} })
  const guest = sessionCookieOf(made)!
  const phoneNumber = newNumber()
  t.same([(await send(phoneNumber, guest)).statusCode, await codesTo(phoneNumber)], [200, []], 'nothing sent')
  const attach = await verify({ phoneNumber, code: '123456', updatePhoneNumber: true }, guest)
  t.same([attach.statusCode, attach.json().code], [403, 'FORBIDDEN'])
  const rows = await app.db.selectFrom('user').select('id').where('phone_number', '=', phoneNumber).execute()
  t.same(rows, [], 'no number attached')
})

t.test('an account with a second factor signs in by phone only through the second step', async (t) => {
  const { user, phoneNumber } = await withNumber()
  const { confirmed } = await enableTotp(app, user, clock.now())
  t.equal(confirmed.statusCode, 200)
  const b = browser()
  await b.client.phoneNumber.sendOtp({ phoneNumber })
  const verified = await b.client.phoneNumber.verify({ phoneNumber, code: await lastCodeTo(phoneNumber) })
  t.same(verified.data, { twoFactorRedirect: true, twoFactorMethods: ['totp'] })
  t.notOk(b.jar.get(SESSION), 'no session yet')
  t.ok(b.jar.get(CHALLENGE), "the second step's cookie")
})

t.test('a banned account does not sign in by phone', async (t) => {
  const { user, phoneNumber } = await withNumber()
  await app.db.updateTable('user').set({ banned: true }).where('id', '=', user.id).execute()
  await send(phoneNumber)
  const res = await verify({ phoneNumber, code: await lastCodeTo(phoneNumber) })
  t.same([res.statusCode, res.json().code], [403, 'BANNED_USER'])
  t.notOk(sessionCookieOf(res))
})

t.test('a take-back removes the number with the other ways in', async (t) => {
  // A squatter registered the address (unproven) and attached a phone; the mailbox holder's code takes it back.
  const { user, phoneNumber } = await withNumber()
  const { CodeStore } = await import('../../src/auth/links/codes.js')
  const { TEST_SECRET } = await import('../helpers/app.js')
  const otp = await new CodeStore(TEST_SECRET).issue(app.db, 'sign-in-code', user.email, user.id, clock.now())
  const res = await call(app, 'POST', '/api/auth/sign-in/email-otp', { body: { email: user.email, otp } })
  t.equal(res.statusCode, 200, res.body)
  const [taken] = await auditEvents(app.db, { action: 'auth.account_taken_back', targetId: user.id })
  t.match(taken?.details, { removedAccounts: ['credential', 'phone-number'] })
  await send(phoneNumber)
  t.equal((await verify({ phoneNumber, code: await lastCodeTo(phoneNumber) })).json().code, 'INVALID_OTP', 'no longer a way in')
})

t.test('attaching needs a fresh session', async (t) => {
  const user = await signUp(app)
  const phoneNumber = newNumber()
  await send(phoneNumber, user.cookie)
  const code = await lastCodeTo(phoneNumber)
  offsetMs += 25 * 3_600_000
  t.teardown(() => {
    offsetMs -= 25 * 3_600_000
  })
  const res = await verify({ phoneNumber, code, updatePhoneNumber: true }, user.cookie)
  t.same([res.statusCode, res.json().code], [403, 'SESSION_NOT_FRESH'])
})

t.test('the budgets: codes sent per number, tries per number and client', async (t) => {
  const limited = await buildTestApp({
    env: { PHONE_SIGN_IN: 'true', RATE_LIMIT_CODES_PER_ADDRESS_PER_DAY: '2', RATE_LIMIT_SIGN_IN_EMAIL_PER_MINUTE: '2' },
  })
  const phoneNumber = newNumber()
  const post = (url: string, body: unknown) => call(limited, 'POST', url, { body })
  for (let i = 0; i < 2; i++) t.equal((await post('/api/auth/phone-number/send-otp', { phoneNumber })).statusCode, 200)
  const third = await post('/api/auth/phone-number/send-otp', { phoneNumber })
  t.same([third.statusCode, third.json().code], [429, 'RATE_LIMITED'], 'the third code of the day to one number')
  t.ok(third.json().data?.retryAfter > 0, 'with retryAfter')
  t.equal(
    (await post('/api/auth/phone-number/send-otp', { phoneNumber: newNumber() })).statusCode,
    200,
    'another number is not refused',
  )
  for (let i = 0; i < 2; i++) {
    t.equal((await post('/api/auth/phone-number/verify', { phoneNumber, code: '000000' })).statusCode, 400)
  }
  const tries = await post('/api/auth/phone-number/verify', { phoneNumber, code: '000000' })
  t.same([tries.statusCode, tries.json().code], [429, 'RATE_LIMITED'], 'the third try a minute from one client')
})

t.test('off by default: the routes do not exist', async (t) => {
  const off = await buildTestApp()
  for (const path of ['/api/auth/phone-number/send-otp', '/api/auth/phone-number/verify']) {
    const res = await call(off, 'POST', path, { body: { phoneNumber: '+6281234567890', code: '123456' } })
    t.equal(res.statusCode, 404, path)
  }
})
