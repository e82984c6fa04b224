// Issue 34, findings 2, 3 and 6: a stranger can never lock a person out, and brute force stays
// capped. Strangers' guesses and mail requests, from one IP or several IPv6 /64s, must not refuse
// the owner's right password on a browser that signed in before, nor the owner's emailed code or
// link on a new device; a browser that once signed in is forgotten by a take-back, "this wasn't
// me", a reset, a change of password and a ban. Real app, real SMTP server, a clock the test moves.
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { hashToken } from '../../src/auth/core/tokens.js'
import { buildTestApp, uniqueEmail, WEB_ORIGIN } from '../helpers/app.js'
import { linkIn, type ReceivedMail, startSmtpServer } from '../helpers/smtp.js'

const smtp = await startSmtpServer()
let offsetMs = 0
const clock = { now: () => new Date(Date.now() + offsetMs) }
const HOUR = 3_600_000
const DEVICE = 'insight.device'
const PASSWORD = 'correct horse battery staple'
const API_ORIGIN = 'http://localhost:8787'

/** The shipped defaults of the budgets this file is about (test/helpers/limits.ts lifts them). */
const DEFAULTS = {
  RATE_LIMIT_SIGN_IN_EMAIL_PER_MINUTE: '5',
  RATE_LIMIT_MAIL_PER_HOUR: '3',
  RATE_LIMIT_MAIL_PER_ADDRESS_PER_HOUR: '10',
  RATE_LIMIT_CODES_PER_CLIENT_PER_DAY: '6',
  RATE_LIMIT_CODES_PER_ADDRESS_PER_DAY: '24',
  RATE_LIMIT_HASHES_PER_ACCOUNT_PER_MINUTE: '10',
}
const app = await buildTestApp({ env: { SMTP_URL: smtp.url, ...DEFAULTS }, deps: { clock } })

let ipCounter = 1
const freshIp = () => `10.${(process.pid % 200) + 20}.${Math.floor(ipCounter / 250)}.${ipCounter++ % 250}`
let prefixCounter = 1
/** A fresh IPv6 /64: a client that can use any address in it. */
const fresh64 = () => `2001:db8:${process.pid % 65_000}:${prefixCounter++}`

/** A browser: its IP and its cookies, kept from every answer as a browser keeps them. */
class Browser {
  readonly jar = new Map<string, string>()
  constructor(
    readonly app: FastifyInstance,
    public ip = freshIp(),
  ) {}

  get cookie(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ')
  }

  async send(url: string, body: object, origin = WEB_ORIGIN): Promise<LightMyRequestResponse> {
    const cookie = this.cookie
    const res = await this.app.inject({
      method: 'POST',
      url,
      remoteAddress: this.ip,
      headers: { origin, ...(cookie ? { cookie } : {}) },
      payload: body,
    })
    const header = res.headers['set-cookie']
    for (const set of Array.isArray(header) ? header : header ? [header] : []) {
      const [pair] = set.split(';', 1)
      const at = pair!.indexOf('=')
      const [name, value] = [pair!.slice(0, at), pair!.slice(at + 1)]
      if (value === '' || /max-age=0/i.test(set)) this.jar.delete(name)
      else this.jar.set(name, value)
    }
    return res
  }

  signIn(email: string, password: string) {
    return this.send('/api/auth/sign-in/email', { email, password })
  }
}

/** An owner: signed up in `browser` (which thereby signed in to the account), address verified. */
async function owner(): Promise<{ id: string; email: string; browser: Browser }> {
  const browser = new Browser(app)
  const email = uniqueEmail('lockout')
  const res = await browser.send('/api/auth/sign-up/email', { name: 'Owner', email, password: PASSWORD })
  if (res.statusCode !== 200) throw new Error(res.body)
  const id = res.json().user.id as string
  await app.db.updateTable('user').set({ email_verified: true }).where('id', '=', id).execute()
  await app.settled()
  return { id, email, browser }
}

const codeIn = (mail: ReceivedMail) => /\b(\d{6})\b/.exec(mail.text)![1]!
const mailTo = async (email: string) => {
  await app.settled()
  return smtp.inbox.next(email, 5_000)
}
/** The security notices mailed to `email` since the last call. */
async function noticesTo(email: string): Promise<string[]> {
  await app.settled()
  const mails = smtp.inbox.notices.for(email)
  for (const m of mails) smtp.inbox.notices.mails.splice(smtp.inbox.notices.mails.indexOf(m), 1)
  return mails.map((m) => m.subject.replace('Security notice: ', ''))
}
/** Mails to `email` not yet taken, dropped. */
const dropMails = async (email: string) => {
  await app.settled()
  for (const m of smtp.inbox.for(email)) smtp.inbox.mails.splice(smtp.inbox.mails.indexOf(m), 1)
}
const knownDevices = async (userId: string) =>
  (await app.db.selectFrom('known_device').select('device_hash').where('user_id', '=', userId).execute()).map(
    (r) => r.device_hash,
  )
/** Whether the account remembers the device of `browser` (any id its cookie holds). */
async function knows(userId: string, browser: Browser): Promise<boolean> {
  const signed = decodeURIComponent(browser.jar.get(DEVICE) ?? '')
  const ids = signed.slice(0, signed.lastIndexOf('.')).split('.')
  const stored = await knownDevices(userId)
  return ids.some((id) => stored.includes(hashToken(`${userId}:${id}`)))
}
const nextMinute = () => {
  offsetMs += 61_000
}

t.test('finding 2: five wrong passwords a minute from one IP lock the owner out of nothing', async (t) => {
  const { email, browser } = await owner()
  const guesser = new Browser(app)
  const guesses: number[] = []
  for (let i = 0; i < 5; i++) guesses.push((await guesser.signIn(email, `wrong guess ${i}`)).statusCode)
  t.same(guesses, [401, 401, 401, 429, 429], "one client gets 3 of the address's 5 checks a minute")

  for (let i = 0; i < 3; i++) {
    const right = await browser.signIn(email, PASSWORD)
    t.equal(right.statusCode, 200, `the owner's browser: the right password signs in (${i + 1})`)
  }

  // The owner on a new device: an emailed code signs in, another resets the password.
  const phone = new Browser(app)
  t.equal((await phone.send('/api/auth/email-otp/send-verification-otp', { email, type: 'sign-in' })).statusCode, 200)
  const signIn = await phone.send('/api/auth/sign-in/email-otp', { email, otp: codeIn(await mailTo(email)) })
  t.equal(signIn.statusCode, 200, `the emailed code signs in: ${signIn.body}`)
  const tablet = new Browser(app)
  t.equal((await tablet.send('/api/auth/email-otp/request-password-reset', { email })).statusCode, 200)
  const reset = await tablet.send('/api/auth/email-otp/reset-password', {
    email,
    otp: codeIn(await mailTo(email)),
    password: 'a brand new passphrase',
  })
  t.equal(reset.statusCode, 200, `the code-based reset works: ${reset.body}`)
  nextMinute()
})

t.test("finding 2: the guesser stays capped at the address's checks a minute, whatever the number of IPs", async (t) => {
  const { email, browser } = await owner()
  const statuses: number[] = []
  for (let i = 0; i < 8; i++) statuses.push((await new Browser(app).signIn(email, `wrong ${i}`)).statusCode)
  t.same(statuses, [401, 401, 401, 401, 401, 429, 429, 429], 'five a minute from unknown clients, every IP together')
  const stranger = await new Browser(app).signIn(email, PASSWORD)
  t.equal(stranger.statusCode, 429, 'the right password from an unknown client waits too: a guesser cannot tell')
  t.equal((await browser.signIn(email, PASSWORD)).statusCode, 200, "the owner's browser has its own allowance")
  const own: number[] = []
  for (let i = 0; i < 5; i++) own.push((await browser.signIn(email, `typo ${i}`)).statusCode)
  t.same(own, [401, 401, 401, 401, 429], 'and it is capped too: five a minute, the right answer included')
  // A browser known to another account is a stranger here.
  const other = await owner()
  t.equal((await other.browser.signIn(email, 'wrong')).statusCode, 429)
  // A forged device cookie proves nothing.
  const forger = new Browser(app)
  forger.jar.set(DEVICE, 'a'.repeat(43))
  t.equal((await forger.signIn(email, 'wrong')).statusCode, 429)
  nextMinute()
})

t.test("finding 2: ten mail requests an hour from four /64s block none of the owner's ways in on a new device", async (t) => {
  const { email } = await owner()
  const prefixes = [fresh64(), fresh64(), fresh64(), fresh64()]
  const asked: number[] = []
  for (let i = 0; i < 10; i++) {
    const stranger = new Browser(app, `${prefixes[i % 4]}::${i + 1}`)
    asked.push((await stranger.send('/api/auth/request-password-reset', { email })).statusCode)
  }
  t.same(asked, Array(10).fill(200), 'the strangers asked for ten reset links')
  await dropMails(email)

  const laptop = new Browser(app)
  const reset = await laptop.send('/api/auth/request-password-reset', { email })
  t.equal(reset.statusCode, 200, `a reset link: ${reset.headers['retry-after'] ?? ''}`)
  t.match(linkIn(await mailTo(email)).pathname, /reset-password/)
  const link = await laptop.send('/api/auth/sign-in/magic-link', { email })
  t.equal(link.statusCode, 200, 'a sign-in link')
  t.match(linkIn(await mailTo(email)).pathname, /magic-link/)
  const code = await laptop.send('/api/auth/email-otp/send-verification-otp', { email, type: 'sign-in' })
  t.equal(code.statusCode, 200, 'a code')
  t.match(codeIn(await mailTo(email)), /^\d{6}$/)
  offsetMs += HOUR
})

t.test('finding 2: strangers who spend the codes of the hour leave the owner the links', async (t) => {
  const { email } = await owner()
  for (let i = 0; i < 10; i++) {
    const stranger = new Browser(app, `${fresh64()}::1`)
    t.equal((await stranger.send('/api/auth/email-otp/send-verification-otp', { email, type: 'sign-in' })).statusCode, 200)
  }
  await dropMails(email)
  const laptop = new Browser(app)
  const code = await laptop.send('/api/auth/email-otp/send-verification-otp', { email, type: 'sign-in' })
  t.equal(code.statusCode, 429, "the hour's codes to the address are spent: six digits are guessable")
  t.equal((await laptop.send('/api/auth/sign-in/magic-link', { email })).statusCode, 200, 'a sign-in link still goes')
  t.equal((await laptop.send('/api/auth/request-password-reset', { email })).statusCode, 200, 'and a reset link')
  offsetMs += HOUR
})

t.test("finding 2: a code is checked against its client's allowance, not the guesses of others", async (t) => {
  const { email } = await owner()
  // Strangers guess the owner's codes from several clients (each code dies after three tries).
  for (let i = 0; i < 6; i++) await new Browser(app).send('/api/auth/sign-in/email-otp', { email, otp: String(100000 + i) })
  const phone = new Browser(app)
  await phone.send('/api/auth/email-otp/send-verification-otp', { email, type: 'sign-in' })
  const res = await phone.send('/api/auth/sign-in/email-otp', { email, otp: codeIn(await mailTo(email)) })
  t.equal(res.statusCode, 200, res.body)
  nextMinute()
})

t.test('finding 6: codes have a daily cap per address and client', async (t) => {
  const { email } = await owner()
  const client = new Browser(app)
  const statuses: number[] = []
  for (let i = 0; i < 8; i++) {
    statuses.push((await client.send('/api/auth/email-otp/send-verification-otp', { email, type: 'sign-in' })).statusCode)
    offsetMs += HOUR
  }
  t.same(statuses, [200, 200, 200, 200, 200, 200, 429, 429], 'six codes a day from one client')
  const refused = await client.send('/api/auth/email-otp/send-verification-otp', { email, type: 'sign-in' })
  t.ok(Number(refused.headers['retry-after']) > HOUR / 1000, 'until the day is over')
  t.equal((await client.send('/api/auth/sign-in/magic-link', { email })).statusCode, 200, 'links are not codes')
  await dropMails(email)
  offsetMs += 24 * HOUR
})

/** A thief's browser that signed in to the account (the owner was told: a new device). */
async function thiefSignedIn(t: Test, user: { email: string }, password = PASSWORD): Promise<Browser> {
  const thief = new Browser(app)
  t.equal((await thief.signIn(user.email, password)).statusCode, 200)
  t.same(await noticesTo(user.email), ['a sign-in from a new device'])
  return thief
}

t.test('finding 3: "this wasn\'t me" and a reset forget the thief\'s browser', async (t) => {
  const { user, thief, notice } = await thiefAndNotice(t)
  t.ok(await knows(user.id, thief))

  // The owner follows the notice's link, then resets from the laptop they read mail on.
  const laptop = new Browser(app)
  const secured = await laptop.send('/api/auth/secure-account', { token: notice }, API_ORIGIN)
  t.equal(secured.statusCode, 200, secured.body)
  t.notOk(await knows(user.id, thief), "this wasn't me forgets every browser")
  t.notOk(await knows(user.id, user.browser))
  await dropMails(user.email)
  await noticesTo(user.email)

  await laptop.send('/api/auth/request-password-reset', { email: user.email })
  const resetToken = linkIn(await mailTo(user.email)).searchParams.get('token')!
  const reset = await laptop.send('/api/auth/reset-password', { token: resetToken, newPassword: 'the owner is back now' })
  t.equal(reset.statusCode, 200, reset.body)
  await noticesTo(user.email)
  t.ok(await knows(user.id, laptop), 'the browser that completed the reset is the one known browser')
  t.equal((await knownDevices(user.id)).length, 1)

  // The thief learns the new password somehow: their browser is a new device again.
  t.equal((await thief.signIn(user.email, 'the owner is back now')).statusCode, 200)
  t.same(await noticesTo(user.email), ['a sign-in from a new device'], 'the owner is told again')
  t.equal((await laptop.signIn(user.email, 'the owner is back now')).statusCode, 200)
  t.same(await noticesTo(user.email), [], "the laptop that reset is the owner's")
  nextMinute()
})

/** A new owner, a thief's browser signed in to their account, and the token of the notice that told them. */
async function thiefAndNotice(t: Test) {
  const user = await owner()
  await noticesTo(user.email)
  const thief = new Browser(app)
  t.equal((await thief.signIn(user.email, PASSWORD)).statusCode, 200)
  return { user, thief, notice: await noticeToken(user.email) }
}

/** The "this wasn't me" link of the one new-device notice mailed to `email` (taken from the inbox). */
async function noticeToken(email: string): Promise<string> {
  await app.settled()
  const [mail, ...more] = smtp.inbox.notices.for(email)
  if (!mail || more.length) throw new Error(`expected one notice to ${email}`)
  smtp.inbox.notices.mails.splice(smtp.inbox.notices.mails.indexOf(mail), 1)
  return linkIn(mail).searchParams.get('token')!
}

t.test('finding 3: a forgotten browser loses its mail exemption', async (t) => {
  const { user, thief, notice } = await thiefAndNotice(t)
  t.equal((await new Browser(app).send('/api/auth/secure-account', { token: notice }, API_ORIGIN)).statusCode, 200)
  // Strangers spend the hour's codes; the thief's browser is a stranger now.
  for (let i = 0; i < 10; i++)
    await new Browser(app, `${fresh64()}::1`).send('/api/auth/email-otp/send-verification-otp', {
      email: user.email,
      type: 'sign-in',
    })
  const asked = await thief.send('/api/auth/email-otp/send-verification-otp', { email: user.email, type: 'sign-in' })
  t.equal(asked.statusCode, 429, "held to the address's cap like any stranger")
  await dropMails(user.email)
  offsetMs += HOUR
})

t.test('finding 3: a take-back, a change of password and a ban forget the browsers', async (t) => {
  t.test('take-back', async (t) => {
    // An address never verified: whoever registered it set up its ways in. The mailbox holder
    // signs in with a code and takes it back.
    const squatter = new Browser(app)
    const email = uniqueEmail('squat')
    const res = await squatter.send('/api/auth/sign-up/email', { name: 'Squatter', email, password: PASSWORD })
    const id = res.json().user.id as string
    t.ok(await knows(id, squatter))
    const holder = new Browser(app)
    await holder.send('/api/auth/email-otp/send-verification-otp', { email, type: 'sign-in' })
    const taken = await holder.send('/api/auth/sign-in/email-otp', { email, otp: codeIn(await mailTo(email)) })
    t.equal(taken.statusCode, 200, taken.body)
    t.notOk(await knows(id, squatter), "the squatter's browser is forgotten")
    t.ok(await knows(id, holder), 'the holder signed in: its browser is known')
    t.equal((await knownDevices(id)).length, 1)
  })

  t.test('a reset that takes the account back keeps only the browser that reset', async (t) => {
    const squatter = new Browser(app)
    const email = uniqueEmail('squat-reset')
    const res = await squatter.send('/api/auth/sign-up/email', { name: 'Squatter', email, password: PASSWORD })
    const id = res.json().user.id as string
    const holder = new Browser(app)
    await holder.send('/api/auth/request-password-reset', { email })
    const token = linkIn(await mailTo(email)).searchParams.get('token')!
    const reset = await holder.send('/api/auth/reset-password', { token, newPassword: 'the holder owns it now' })
    t.equal(reset.statusCode, 200, reset.body)
    t.notOk(await knows(id, squatter), "the squatter's browser is forgotten")
    t.ok(await knows(id, holder), 'the browser that reset is known')
    t.equal((await knownDevices(id)).length, 1)
  })

  t.test('change of password: the browser that changed it is the one known browser', async (t) => {
    const user = await owner()
    await noticesTo(user.email)
    const thief = await thiefSignedIn(t, user)
    const changed = await user.browser.send('/api/auth/change-password', {
      currentPassword: PASSWORD,
      newPassword: 'changed by the owner',
    })
    t.equal(changed.statusCode, 200, changed.body)
    await noticesTo(user.email)
    t.notOk(await knows(user.id, thief))
    t.ok(await knows(user.id, user.browser))
    t.equal((await knownDevices(user.id)).length, 1)
  })

  t.test('ban', async (t) => {
    const user = await owner()
    const admin = await owner()
    await app.db.updateTable('user').set({ role: 'admin' }).where('id', '=', admin.id).execute()
    t.ok((await knownDevices(user.id)).length > 0)
    const ban = await admin.browser.send(`/api/v1/admin/users/${user.id}/ban`, { reason: 'abuse' })
    t.equal(ban.statusCode, 200, ban.body)
    t.same(await knownDevices(user.id), [], 'a ban forgets every browser')
  })
  nextMinute()
})

t.test('the device cookie rotates at each sign-in, per account, and a copied value no longer counts', async (t) => {
  const user = await owner()
  await noticesTo(user.email)
  const before = user.browser.jar.get(DEVICE)
  t.equal((await user.browser.signIn(user.email, PASSWORD)).statusCode, 200)
  t.not(user.browser.jar.get(DEVICE), before, 'a new value')
  t.same(await noticesTo(user.email), [], 'the same browser: no notice')
  t.equal((await knownDevices(user.id)).length, 1, 'the row moved with it')
  const copy = new Browser(app)
  copy.jar.set(DEVICE, before!)
  t.notOk(await knows(user.id, copy), 'the old value is nobody')
  // One browser, two accounts: each keeps it known.
  const second = await owner()
  second.browser.jar.set(DEVICE, user.browser.jar.get(DEVICE)!)
  t.equal((await second.browser.signIn(second.email, PASSWORD)).statusCode, 200)
  await noticesTo(second.email)
  user.browser.jar.set(DEVICE, second.browser.jar.get(DEVICE)!)
  t.ok(await knows(user.id, user.browser), 'still known to the first account')
  t.ok(await knows(second.id, user.browser), 'and known to the second')
  t.equal((await user.browser.signIn(user.email, PASSWORD)).statusCode, 200)
  t.same(await noticesTo(user.email), [])
  nextMinute()
})

t.test('a hostile device cookie is no known browser and no server error', async (t) => {
  const { email } = await owner()
  const id = 'A'.repeat(43)
  const values = [
    '',
    '.',
    Array(50).fill(id).join('.'),
    `${id}.${'x'.repeat(4000)}`,
    "'; drop table known_device; --",
    `${id}.${id}`,
    '\u0000\u00ff',
  ]
  for (const value of values) {
    const browser = new Browser(app)
    browser.jar.set(DEVICE, encodeURIComponent(app.signCookie(value)))
    const signIn = await browser.signIn(email, 'wrong')
    t.ok([401, 429].includes(signIn.statusCode), `sign-in: ${signIn.statusCode} for ${JSON.stringify(value.slice(0, 20))}`)
    const mail = await browser.send('/api/auth/sign-in/magic-link', { email })
    t.ok([200, 429].includes(mail.statusCode), `mail: ${mail.statusCode}`)
    const right = await browser.signIn(email, PASSWORD)
    if (right.statusCode === 200) {
      const set = String(right.headers['set-cookie'])
      t.ok(set.length < 2000, 'the cookie set back holds at most a few ids')
    }
    nextMinute()
  }
  await dropMails(email)
})
