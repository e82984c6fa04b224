// Security notices through a real SMTP server on loopback: a mail on each change to the ways in and
// on a sign-in from a new device, each with a "this wasn't me" link that a mail scanner can open
// harmlessly, that works once, expires, works only for the account and address it was mailed
// about, and secures the account: sessions, trusted devices, pending links and second-factor
// sign-ins end, and the password must be reset.
import type { LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { NOTICES_PER_HOUR } from '../../src/auth/security/notices.js'
import { buildTestApp, call, sessionCookieOf, type TestUser, uniqueEmail } from '../helpers/app.js'
import { auditEvents, countRows, userRow, verificationsOf } from '../helpers/expect.js'
import { linkIn, pressApprove, type ReceivedMail, startSmtpServer } from '../helpers/smtp.js'
import { codeAt, enableTotp } from '../helpers/two-factor.js'

const smtp = await startSmtpServer()
let offsetMs = 0
const clock = { now: () => new Date(Date.now() + offsetMs) }
const app = await buildTestApp({ env: { SMTP_URL: smtp.url }, deps: { clock } })
const API_ORIGIN = 'http://localhost:8787'
const DAY = 24 * 60 * 60 * 1000
const NEW_PASSWORD = 'a new and better passphrase'
// Text only a sender chooses: it must never reach a notice.
const NAME = 'Zed Quillfeather'
const AGENT = 'Agent-9 (visit https://evil.example/login)'

/** `name=value` of a cookie a response set, as a browser sends it back. */
function cookieOf(res: LightMyRequestResponse, name: string): string | undefined {
  const header = res.headers['set-cookie']
  const all = Array.isArray(header) ? header : header ? [header] : []
  return all.find((c) => c.startsWith(`${name}=`) && !c.startsWith(`${name}=;`))?.split(';', 1)[0]
}
const DEVICE = 'insight.device'
const cookies = (...values: Array<string | undefined>) => values.filter(Boolean).join('; ')

function signIn(user: { email: string; password: string }, cookie?: string, password = user.password) {
  return call(app, 'POST', '/api/auth/sign-in/email', {
    body: { email: user.email, password },
    cookie,
    headers: { 'user-agent': AGENT },
  })
}
const whoami = (cookie: string) => call(app, 'GET', '/api/v1/whoami', { cookie })

/** The notices mailed to `email` since the last call, once every mail in flight has gone out. */
async function noticesTo(email: string): Promise<ReceivedMail[]> {
  await app.settled()
  const mails = smtp.inbox.notices.for(email)
  smtp.inbox.notices.mails.splice(
    0,
    smtp.inbox.notices.mails.length,
    ...smtp.inbox.notices.mails.filter((m) => !mails.includes(m)),
  )
  return mails
}
async function oneNoticeTo(t: Test, email: string, subject: string): Promise<string> {
  const mails = await noticesTo(email)
  t.same(
    mails.map((m) => m.subject),
    [`Security notice: ${subject}`],
    `one notice to ${email}: ${subject}`,
  )
  const mail = mails[0]!
  t.notMatch(mail.text, NAME, 'no name in the notice')
  t.notMatch(mail.text, 'evil.example', 'no browser string in the notice')
  const link = linkIn(mail)
  t.equal(`${link.origin}${link.pathname}`, `${API_ORIGIN}/api/auth/security-notice`, 'the link opens the confirm page')
  t.same([...link.searchParams.keys()], ['token'], 'the token is all the link carries')
  t.equal((mail.text.match(/https?:\/\//g) ?? []).length, 1, 'the link is the only link')
  return link.searchParams.get('token')!
}

const openLink = (token: string) =>
  app.inject({ method: 'GET', url: `/api/auth/security-notice?token=${encodeURIComponent(token)}` })
const secure = (token: string, cookie?: string) =>
  call(app, 'POST', '/api/auth/secure-account', { body: { token }, cookie, headers: { origin: API_ORIGIN } })

/** A signed-up user with a distinctive name, and the device cookie of the browser they signed up in. */
async function member(overrides: { email?: string } = {}): Promise<TestUser & { device: string }> {
  const email = overrides.email ?? uniqueEmail('notice')
  const res = await call(app, 'POST', '/api/auth/sign-up/email', {
    body: { name: NAME, email, password: 'correct horse battery staple' },
  })
  if (res.statusCode !== 200) throw new Error(res.body)
  return {
    id: res.json().user.id,
    email,
    password: 'correct horse battery staple',
    cookie: sessionCookieOf(res)!,
    device: cookieOf(res, DEVICE)!,
  }
}

/** Everything the link could change about an account, as one comparable value. */
async function stateOf(userId: string) {
  const row = await userRow(app.db, userId)
  const rows = (table: string) => countRows(app.db, table, 'user_id', userId)
  return {
    email: row.email,
    resetRequired: row.password_reset_required,
    sessions: await rows('session'),
    accounts: await rows('account'),
    links: await rows('verification'),
  }
}

t.test('a sign-in from a device the account has not used is mailed; the same device again is not', async (t) => {
  const user = await member()
  t.ok(user.device, 'sign-up sets the device cookie')
  const again = await signIn(user, user.device)
  t.match(String(again.headers['set-cookie']), /insight\.device=[^;]+;.*HttpOnly/i, 'HttpOnly, renewed at each sign-in')
  const rotated = cookieOf(again, DEVICE)!
  t.not(rotated, user.device, 'with a new value: a copy of the old one counts no more')
  user.device = rotated
  t.same(await noticesTo(user.email), [], "no notice for sign-up's sign-in, nor for the same browser again")

  const elsewhere = await signIn(user)
  t.equal(elsewhere.statusCode, 200)
  const token = await oneNoticeTo(t, user.email, 'a sign-in from a new device')
  t.match(token, /^[A-Za-z0-9_-]{43}$/, '256 random bits')
  const row = await verificationsOf(app.db, user.id).where('purpose', '=', 'security-notice').executeTakeFirstOrThrow()
  t.not(row.token_hash, token, 'only a hash is stored')
  t.ok(Math.abs(row.expires_at.getTime() - clock.now().getTime() - 7 * DAY) < 60_000, 'valid 7 days')

  let newDevice = cookieOf(elsewhere, DEVICE)!
  t.not(newDevice, user.device, 'the new browser got its own device id')
  newDevice = cookieOf(await signIn(user, newDevice), DEVICE)!
  user.device = cookieOf(await signIn(user, user.device), DEVICE)!
  t.same(await noticesTo(user.email), [], 'both browsers are known now')

  const stored = await app.db.selectFrom('known_device').selectAll().where('user_id', '=', user.id).execute()
  t.equal(stored.length, 2)
  for (const d of stored) t.notMatch(`${user.device} ${newDevice}`, d.device_hash, 'the cookie value is not stored')
})

t.test("each change to the account's ways in is mailed, with its own link", async (t) => {
  const user = await member()
  // The password, changed.
  const changed = await call(app, 'POST', '/api/auth/change-password', {
    cookie: cookies(user.cookie, user.device),
    body: { currentPassword: user.password, newPassword: NEW_PASSWORD },
  })
  t.equal(changed.statusCode, 200, changed.body)
  // The browser that changed it stays the account's known browser (every other one is forgotten).
  user.device = cookieOf(changed, DEVICE)!
  await oneNoticeTo(t, user.email, 'your password was changed')
  user.password = NEW_PASSWORD

  // Two-factor, on and off.
  const { confirmed } = await enableTotp(app, user, clock.now())
  t.equal(confirmed.statusCode, 200, confirmed.body)
  await oneNoticeTo(t, user.email, 'two-factor authentication was turned on')
  const off = await call(app, 'POST', '/api/auth/two-factor/disable', { cookie: user.cookie, body: { password: user.password } })
  t.equal(off.statusCode, 200, off.body)
  await oneNoticeTo(t, user.email, 'two-factor authentication was turned off')

  // The password, reset.
  await call(app, 'POST', '/api/auth/request-password-reset', { body: { email: user.email } })
  await app.settled()
  const resetToken = linkIn(await smtp.inbox.next(user.email)).searchParams.get('token')!
  const reset = await call(app, 'POST', '/api/auth/reset-password', {
    body: { token: resetToken, newPassword: 'reset to this one' },
    cookie: user.device,
  })
  t.equal(reset.statusCode, 200, reset.body)
  user.device = cookieOf(reset, DEVICE)!
  await oneNoticeTo(t, user.email, 'your password was reset')

  // A way in, removed (a provider link set up by the provider tests; here its row).
  await app.db
    .insertInto('account')
    .values({ id: `acc-${user.id}`, user_id: user.id, provider_id: 'idp', account_id: `sub-${user.id}`, password_hash: null })
    .execute()
  const cookie = sessionCookieOf(await signIn({ email: user.email, password: 'reset to this one' }, user.device))!
  const unlinked = await call(app, 'POST', '/api/auth/unlink-account', { cookie, body: { providerId: 'idp' } })
  t.equal(unlinked.statusCode, 200, unlinked.body)
  await oneNoticeTo(t, user.email, 'a way to sign in was removed')
})

t.test('a change of address is mailed to the old address, whose link puts the address back', async (t) => {
  const user = await member()
  await app.db.updateTable('user').set({ email_verified: true }).where('id', '=', user.id).execute()
  const newEmail = uniqueEmail('taker')
  const asked = await call(app, 'POST', '/api/auth/change-email', { cookie: user.cookie, body: { newEmail } })
  t.equal(asked.statusCode, 200, asked.body)
  await app.settled()
  // The old address approves (its page's button), the new one confirms in the account's session.
  t.equal((await pressApprove(app, await smtp.inbox.next(user.email))).statusCode, 200, 'the approval')
  const link = linkIn(await smtp.inbox.next(newEmail))
  const opened = await app.inject({ method: 'GET', url: `${link.pathname}${link.search}`, headers: { cookie: user.cookie } })
  t.equal(opened.statusCode, 302, "the new address's link")
  t.equal((await userRow(app.db, user.id)).email, newEmail, 'the address changed')
  const token = await oneNoticeTo(t, user.email, 'your email address was changed')
  t.same(await noticesTo(newEmail), [], 'the new address gets no notice of it')
  // Whoever took it links a provider account of theirs.
  await app.db
    .insertInto('account')
    .values({ id: `taker-${user.id}`, user_id: user.id, provider_id: 'idp', account_id: `taker-${user.id}`, password_hash: null })
    .execute()
  await app.settled()
  smtp.inbox.mails.splice(0)

  const done = await secure(token)
  t.equal(done.statusCode, 200, done.body)
  const row = await userRow(app.db, user.id)
  t.same([row.email, row.email_verified, row.password_reset_required], [user.email, true, true], 'the old address is back')
  t.ok(row.former_emails.includes(newEmail), 'the taken address is among the former ones (erasure scrubs it)')
  t.same(
    (await app.db.selectFrom('account').select('provider_id').where('user_id', '=', user.id).execute()).map((a) => a.provider_id),
    ['credential'],
    'the provider link went',
  )
  t.equal((await signIn({ email: newEmail, password: user.password })).statusCode, 401, 'the new address signs in no more')
  await app.settled()
  t.same(
    smtp.inbox.for(user.email).map((m) => m.subject),
    ['Reset your password'],
    'the reset link goes to the address put back',
  )
  t.same(smtp.inbox.for(newEmail), [])
  smtp.inbox.mails.splice(0)
  t.match((await auditEvents(app.db, { action: 'auth.account_secured', targetId: user.id }))[0], {
    details: { notice: 'email_changed', addressRestored: true, removedAccounts: ['idp'] },
  })
})

t.test('opening the link, as a mail scanner does, only shows the page', async (t) => {
  const user = await member()
  await signIn(user)
  const token = await oneNoticeTo(t, user.email, 'a sign-in from a new device')
  const before = await stateOf(user.id)
  for (let i = 0; i < 3; i++) {
    const page = await openLink(token)
    t.equal(page.statusCode, 200)
    t.match(page.headers['content-type'], /^text\/html/)
    t.match(page.headers['content-security-policy'], /script-src 'nonce-[^']+'/)
    t.equal(page.headers['referrer-policy'], 'no-referrer')
    t.match(page.body, /<button id="secure"/)
    t.match(page.body, /a device \(browser\) it had not used before/)
    t.notMatch(page.body, NAME)
    t.notMatch(page.body, user.email, 'the page does not show the address')
  }
  const head = await app.inject({ method: 'HEAD', url: `/api/auth/security-notice?token=${token}` })
  t.ok(head.statusCode < 500)
  t.same(await stateOf(user.id), before, 'nothing changed')
  t.equal((await whoami(user.cookie)).statusCode, 200, 'the session still works')
  t.same(await auditEvents(app.db, { action: 'auth.account_secured', targetId: user.id }), [])
})

t.test(
  'the link secures the account: sessions, trusted devices, links and second-factor sign-ins end; a reset is required and works',
  async (t) => {
    const user = await member()
    await app.db.updateTable('user').set({ email_verified: true }).where('id', '=', user.id).execute()
    const { secret } = await enableTotp(app, user, clock.now())
    const token = await oneNoticeTo(t, user.email, 'two-factor authentication was turned on')
    // A trusted device: a sign-in that passed its second factor with trustDevice.
    const first = await signIn(user, user.device)
    const challenge = cookieOf(first, 'better-auth.two_factor')!
    offsetMs += 30_000
    const verified = await call(app, 'POST', '/api/auth/two-factor/verify-totp', {
      cookie: cookies(challenge, user.device),
      body: { code: codeAt(secret, clock.now()), trustDevice: true },
    })
    t.equal(verified.statusCode, 200, verified.body)
    const trusted = cookieOf(verified, 'better-auth.trust_device')!
    const second = sessionCookieOf(verified)!
    // A sign-in waiting for its second factor, and a pending reset link.
    const waiting = cookieOf(await signIn(user), 'better-auth.two_factor')!
    await call(app, 'POST', '/api/auth/request-password-reset', { body: { email: user.email } })
    await app.settled()
    const pendingReset = linkIn(await smtp.inbox.next(user.email)).searchParams.get('token')!
    t.ok(await countRows(app.db, 'verification', 'user_id', user.id), 'links, a challenge and a trusted device are pending')

    const done = await secure(token)
    t.equal(done.statusCode, 200, done.body)
    t.same(done.json(), { status: true })

    for (const cookie of [user.cookie, second]) t.equal((await whoami(cookie)).statusCode, 401, 'every session ended')
    t.equal(await countRows(app.db, 'session', 'user_id', user.id), 0)
    const left = await app.db.selectFrom('verification').select('purpose').where('user_id', '=', user.id).execute()
    t.same(
      left.map((r) => r.purpose),
      ['reset-password'],
      'only the reset link mailed after it: no trusted device, challenge, older link or notice',
    )
    const oldReset = await call(app, 'POST', '/api/auth/reset-password', {
      body: { token: pendingReset, newPassword: NEW_PASSWORD },
    })
    t.equal(oldReset.json().code, 'INVALID_TOKEN', 'a reset link mailed before is gone')
    offsetMs += 30_000
    const late = await call(app, 'POST', '/api/auth/two-factor/verify-totp', {
      cookie: waiting,
      body: { code: codeAt(secret, clock.now()) },
    })
    t.equal(late.statusCode, 401, 'the sign-in waiting for its second factor ended')
    const withTrust = await signIn(user, cookies(trusted, user.device))
    t.equal(withTrust.statusCode, 403)
    t.equal(withTrust.json().code, 'PASSWORD_RESET_REQUIRED', 'the password signs in no more, trusted device or not')
    t.notOk(sessionCookieOf(withTrust), 'no session')
    t.equal((await userRow(app.db, user.id)).two_factor_enabled, true, 'two-factor stays: a mail never takes a factor away')

    const audit = await auditEvents(app.db, { action: 'auth.account_secured', targetId: user.id })
    t.equal(audit.length, 1)
    t.match(audit[0], { actor_id: user.id, ip: String, details: { notice: 'two_factor_enabled', sessionsEnded: 2 } })
    t.notMatch(JSON.stringify(audit[0]!.details), token)

    // The reset mail: sent when the account was secured (and again by the refused sign-in).
    await app.settled()
    const resetMails = smtp.inbox.for(user.email)
    t.ok(resetMails.length >= 1 && resetMails.every((m) => m.subject === 'Reset your password'), 'a reset link was mailed')
    const resetToken = linkIn(resetMails[0]!).searchParams.get('token')!
    smtp.inbox.mails.splice(0)
    const reset = await call(app, 'POST', '/api/auth/reset-password', { body: { token: resetToken, newPassword: NEW_PASSWORD } })
    t.equal(reset.statusCode, 200, reset.body)
    const back = await signIn({ email: user.email, password: NEW_PASSWORD }, cookies(trusted, user.device))
    t.same(
      back.json(),
      { twoFactorRedirect: true, twoFactorMethods: ['totp'] },
      'the new password signs in, to its second factor: the trusted device skips it no more',
    )
  },
)

t.test('the link works once', async (t) => {
  const user = await member()
  await signIn(user)
  const token = await oneNoticeTo(t, user.email, 'a sign-in from a new device')
  t.equal((await secure(token)).statusCode, 200)
  const again = await secure(token)
  t.equal(again.statusCode, 400)
  t.match(again.json(), { code: 'INVALID_TOKEN', status: 400 })
  const page = await openLink(token)
  t.equal(page.statusCode, 400)
  t.match(page.body, /no longer works/)
  t.equal((await auditEvents(app.db, { action: 'auth.account_secured', targetId: user.id })).length, 1)
})

t.test('the link expires after 7 days', async (t) => {
  const user = await member()
  await signIn(user)
  const token = await oneNoticeTo(t, user.email, 'a sign-in from a new device')
  offsetMs += 7 * DAY + 60_000
  t.teardown(() => {
    offsetMs -= 7 * DAY + 60_000
  })
  const before = await stateOf(user.id)
  const late = await secure(token)
  t.equal(late.statusCode, 400)
  t.equal(late.json().code, 'INVALID_TOKEN')
  t.equal((await openLink(token)).statusCode, 400)
  t.same({ ...(await stateOf(user.id)), links: 0 }, { ...before, links: 0 }, 'nothing changed')
})

t.test("a forged token, another link's token, another account's: each is refused and locks nobody out", async (t) => {
  const alice = await member()
  const bob = await member()
  await signIn(alice)
  const aliceToken = await oneNoticeTo(t, alice.email, 'a sign-in from a new device')
  await call(app, 'POST', '/api/auth/request-password-reset', { body: { email: bob.email } })
  await app.settled()
  const bobReset = linkIn(await smtp.inbox.next(bob.email)).searchParams.get('token')!
  const bobBefore = await stateOf(bob.id)
  for (const token of ['x'.repeat(43), `${aliceToken}x`, aliceToken.slice(1), bobReset]) {
    const res = await secure(token)
    t.equal(res.statusCode, 400, token)
    t.equal(res.json().code, 'INVALID_TOKEN')
  }
  t.same(await stateOf(bob.id), bobBefore, "bob's account is as it was")
  t.equal((await whoami(bob.cookie)).statusCode, 200)

  // Alice's token acts on Alice's account only, whoever sends it and with whatever session.
  t.equal((await secure(aliceToken, bob.cookie)).statusCode, 200)
  t.equal((await whoami(bob.cookie)).statusCode, 200, "bob's session, sending it, still works")
  t.same(await stateOf(bob.id), bobBefore)
  t.equal((await whoami(alice.cookie)).statusCode, 401)
})

t.test('a link stops working once the account no longer has the address it was mailed to', async (t) => {
  const user = await member()
  await signIn(user)
  const token = await oneNoticeTo(t, user.email, 'a sign-in from a new device')
  // The owner moves the account to another address (an unverified account's change goes straight there).
  const newEmail = uniqueEmail('moved')
  await call(app, 'POST', '/api/auth/change-email', { cookie: user.cookie, body: { newEmail } })
  await app.settled()
  const confirm = linkIn(await smtp.inbox.next(newEmail))
  const opened = await app.inject({
    method: 'GET',
    url: `${confirm.pathname}${confirm.search}`,
    headers: { cookie: user.cookie },
  })
  t.equal(opened.statusCode, 302)
  // An address nobody had proven is told of the change too (change-email-guards.test.ts), with a link of its own.
  t.same(
    (await noticesTo(user.email)).map((m) => m.subject),
    ['Security notice: your email address was changed'],
  )
  const before = await stateOf(user.id)
  t.equal((await openLink(token)).statusCode, 400)
  const res = await secure(token)
  t.equal(res.statusCode, 400)
  t.same(await stateOf(user.id), before, 'whoever reads the old mailbox cannot act on the account')
  t.equal((await whoami(user.cookie)).statusCode, 200)
})

t.test('the notices of one account are limited per hour', async (t) => {
  const user = await member()
  for (let i = 0; i < NOTICES_PER_HOUR + 2; i++) t.equal((await signIn(user)).statusCode, 200)
  t.equal((await noticesTo(user.email)).length, NOTICES_PER_HOUR)
  offsetMs += 61 * 60_000
  t.teardown(() => {
    offsetMs -= 61 * 60_000
  })
  await signIn(user)
  t.equal((await noticesTo(user.email)).length, 1, 'an hour later, the next one is mailed')
})
