// Issue 34, finding 1: a mailbox never beats a second factor. An emailed code, a sign-in link or a
// reset proves the mailbox and nothing more: an account with TOTP or a passkey still asks for it,
// keeps it, and keeps its role; only an account without one is taken back, left a member, and told.
// Two-factor and passkeys are set up only by a session that proved the address itself.
import t, { type Test } from 'tap'
import { call, sessionCookieOf, signUp, type TestUser, WEB_ORIGIN } from '../helpers/app.js'
import { SoftAuthenticator } from '../helpers/authenticator.js'
import { auditEvents, userRow } from '../helpers/expect.js'
import { registerPasskey, registrationOf, signInWithPasskey } from '../helpers/passkey.js'
import { linkIn, pressApprove, type ReceivedMail, startSmtpServer } from '../helpers/smtp.js'
import { codeAt, enableTotp, twoFactorApp } from '../helpers/two-factor.js'
import { ADDRESS_PROOF_MAX_AGE_MS } from '../../src/auth/session/second-factor.js'

const smtp = await startSmtpServer()
const { app, clock } = await twoFactorApp({ SMTP_URL: smtp.url })

const codeIn = (mail: ReceivedMail) => /\b(\d{6})\b/.exec(mail.text)![1]!
const settled = () => (app as unknown as { settled: () => Promise<void> }).settled()

/** The next code the mailbox of `email` gets for `type`. */
async function mailedCode(email: string, type: 'sign-in' | 'email-verification' | 'forget-password') {
  const sent = await call(app, 'POST', '/api/auth/email-otp/send-verification-otp', { body: { email, type } })
  if (sent.statusCode !== 200) throw new Error(`send code: ${sent.statusCode} ${sent.body}`)
  return codeIn(await smtp.inbox.next(email))
}

/** The mailbox holder signs in with a code, from a browser with nothing of the account's. */
const signInWithCode = async (email: string) =>
  call(app, 'POST', '/api/auth/sign-in/email-otp', { body: { email, otp: await mailedCode(email, 'sign-in') } })

/** The mailbox holder presses the button of a sign-in link. */
async function signInWithLink(email: string) {
  await call(app, 'POST', '/api/auth/sign-in/magic-link', { body: { email, callbackURL: '/home' } })
  const token = linkIn(await smtp.inbox.next(email)).searchParams.get('token')!
  return call(app, 'POST', '/api/auth/magic-link/verify', { body: { token } })
}

/** The password sign-in's answer. */
const signInWithPassword = (user: { email: string }, password: string) =>
  call(app, 'POST', '/api/auth/sign-in/email', { body: { email: user.email, password } })

/**
 * A sign-in with a code, then one with a link, each answered with the request for the second factor
 * `method` and no session; `each` checks more of each answer.
 */
async function codeAndLinkAskFor(t: Test, email: string, method: 'totp' | 'passkey', each?: (how: string) => Promise<void>) {
  const answers = [
    ['code', await signInWithCode(email)],
    ['link', await signInWithLink(email)],
  ] as const
  for (const [how, res] of answers) {
    t.equal(res.statusCode, 200, `${how}: ${res.body}`)
    t.match(
      res.json(),
      { twoFactorRedirect: true, twoFactorMethods: [method] },
      `${how}: asks for the ${method === 'totp' ? 'second factor' : 'passkey'}`,
    )
    t.equal(sessionCookieOf(res), undefined, `${how}: no session`)
    await each?.(how)
  }
}

/** A code for the address typed in the account's own session: its ways in are its owner's. */
async function proveInSession(user: TestUser) {
  const otp = await mailedCode(user.email, 'email-verification')
  const res = await call(app, 'POST', '/api/auth/email-otp/verify-email', {
    cookie: user.cookie,
    body: { email: user.email, otp },
  })
  if (res.statusCode !== 200) throw new Error(`verify in session: ${res.statusCode} ${res.body}`)
}

/** Asks for a verification link; its URL, for a phone's mail app (no session of the account) to open later. */
async function verificationLink(user: TestUser) {
  await call(app, 'POST', '/api/auth/send-verification-email', { body: { email: user.email } })
  return linkIn(await smtp.inbox.next(user.email))
}
const openWithoutSession = (link: URL) => call(app, 'GET', `${link.pathname}${link.search}`)

const setRole = (id: string, role: 'admin' | 'owner') => app.db.updateTable('user').set({ role }).where('id', '=', id).execute()
/** Marks the account as one whose address was verified without its session, as every account could be before the rule. */
const markUnproven = (id: string) => app.db.updateTable('user').set({ ways_in_unproven: true }).where('id', '=', id).execute()

const PASSWORD_OF_MAILBOX = 'the mailbox holder chose this one'

t.test('an admin with TOTP who verified from the phone: a code asks for TOTP, and nothing is taken', async (t) => {
  const admin = await signUp(app)
  await setRole(admin.id, 'admin')
  const phoneLink = await verificationLink(admin) // mailed, and left in the inbox
  await proveInSession(admin)
  const { secret, confirmed } = await enableTotp(app, admin, clock.now())
  t.equal(confirmed.statusCode, 200, confirmed.body)
  // The phone's mail app (or a link scanner) opens the earlier link, with no session of the account.
  t.equal((await openWithoutSession(phoneLink)).statusCode, 200)

  const res = await signInWithCode(admin.email)
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json(), { twoFactorRedirect: true, twoFactorMethods: ['totp'] }, 'the second factor is asked for')
  t.equal(sessionCookieOf(res), undefined, 'no session for the mailbox alone')
  const row = await userRow(app.db, admin.id)
  t.equal(row.two_factor_enabled, true, 'TOTP stays')
  t.equal(row.role, 'admin', 'the role stays with whoever holds the second factor')
  t.same(await auditEvents(app.db, { action: 'auth.account_taken_back', targetId: admin.id }), [], 'no take-back')
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: admin.cookie })).statusCode, 200, "the owner's session lives")
  // The owner's password and TOTP still work.
  const password = await signInWithPassword(admin, admin.password)
  t.same(password.json(), { twoFactorRedirect: true, twoFactorMethods: ['totp'] })
  const totp = await call(app, 'POST', '/api/auth/two-factor/verify-totp', {
    cookie: String(password.headers['set-cookie']).match(/better-auth\.two_factor=[^;]+/)![0],
    body: { code: codeAt(secret, clock.now(), 1) },
  })
  t.equal(totp.statusCode, 200, totp.body)
})

t.test('an account with TOTP whose ways in are unproven keeps TOTP and role against a code, a link and a reset', async (t) => {
  const admin = await signUp(app)
  await setRole(admin.id, 'admin')
  await proveInSession(admin)
  const { confirmed } = await enableTotp(app, admin, clock.now())
  t.equal(confirmed.statusCode, 200)
  await markUnproven(admin.id)

  await codeAndLinkAskFor(t, admin.email, 'totp', async (how) => {
    t.equal((await userRow(app.db, admin.id)).two_factor_enabled, true, `${how}: TOTP stays`)
  })

  // A reset sets the mailbox holder's password; signing in with it still asks for the second factor.
  const otp = await mailedCode(admin.email, 'forget-password')
  const reset = await call(app, 'POST', '/api/auth/email-otp/reset-password', {
    body: { email: admin.email, otp, password: PASSWORD_OF_MAILBOX },
  })
  t.equal(reset.statusCode, 200, reset.body)
  const row = await userRow(app.db, admin.id)
  t.equal(row.two_factor_enabled, true, 'a reset keeps TOTP')
  t.equal(row.role, 'admin')
  const after = await signInWithPassword(admin, PASSWORD_OF_MAILBOX)
  t.same(after.json(), { twoFactorRedirect: true, twoFactorMethods: ['totp'] })
  t.equal(sessionCookieOf(after), undefined)
  const backupCodes = await app.db
    .selectFrom('two_factor_backup_code')
    .select('user_id')
    .where('user_id', '=', admin.id)
    .execute()
  t.equal(backupCodes.length, 10, 'the backup codes stay')
})

t.test('a passkey-only account: a code, a link and a reset ask for the passkey, which stays', async (t) => {
  const user = await signUp(app)
  await proveInSession(user)
  const authenticator = new SoftAuthenticator(WEB_ORIGIN)
  await registerPasskey(app, authenticator, user.cookie)
  await markUnproven(user.id)

  await codeAndLinkAskFor(t, user.email, 'passkey')
  const otp = await mailedCode(user.email, 'forget-password')
  const reset = await call(app, 'POST', '/api/auth/email-otp/reset-password', {
    body: { email: user.email, otp, password: PASSWORD_OF_MAILBOX },
  })
  t.equal(reset.statusCode, 200, reset.body)
  const after = await signInWithPassword(user, PASSWORD_OF_MAILBOX)
  t.same(after.json(), { twoFactorRedirect: true, twoFactorMethods: ['passkey'] }, 'the new password alone is not enough')
  t.equal(sessionCookieOf(after), undefined)
  const passkeys = await app.db.selectFrom('passkey').select('id').where('user_id', '=', user.id).execute()
  t.equal(passkeys.length, 1, 'the passkey stays')
  const withPasskey = await signInWithPasskey(app, authenticator)
  t.equal(withPasskey.statusCode, 200, 'the passkey signs in')
  t.ok(sessionCookieOf(withPasskey))
})

t.test('a reset link of a verified passkey-only account keeps the passkey', async (t) => {
  const user = await signUp(app)
  await proveInSession(user)
  await registerPasskey(app, new SoftAuthenticator(WEB_ORIGIN), user.cookie)
  await call(app, 'POST', '/api/auth/request-password-reset', { body: { email: user.email } })
  const token = linkIn(await smtp.inbox.next(user.email)).searchParams.get('token')!
  const reset = await call(app, 'POST', '/api/auth/reset-password', { body: { token, newPassword: PASSWORD_OF_MAILBOX } })
  t.equal(reset.statusCode, 200, reset.body)
  t.equal((await app.db.selectFrom('passkey').select('id').where('user_id', '=', user.id).execute()).length, 1)
  t.same((await signInWithPassword(user, PASSWORD_OF_MAILBOX)).json(), { twoFactorRedirect: true, twoFactorMethods: ['passkey'] })
})

t.test('two-factor and passkeys are set up only by a session that proved the address itself', async (t) => {
  const user = await signUp(app)
  const refused = (res: { statusCode: number; json: () => { code?: string } }, what: string) => {
    t.equal(res.statusCode, 403, what)
    t.equal(res.json().code, 'EMAIL_NOT_PROVEN', what)
  }
  const enable = () =>
    call(app, 'POST', '/api/auth/two-factor/enable', { cookie: user.cookie, body: { password: user.password } })
  const passkeyOptions = () => call(app, 'GET', '/api/auth/passkey/generate-register-options', { cookie: user.cookie })
  refused(await enable(), 'never verified: no TOTP')
  refused(await passkeyOptions(), 'never verified: no passkey')

  // Verified by a link opened elsewhere (a phone, a scanner): not this session's proof.
  t.equal((await openWithoutSession(await verificationLink(user))).statusCode, 200)
  t.equal((await userRow(app.db, user.id)).email_verified, true)
  refused(await enable(), 'verified without the session: no TOTP')
  refused(await passkeyOptions(), 'verified without the session: no passkey')
  t.equal(await app.db.selectFrom('two_factor').select('user_id').where('user_id', '=', user.id).executeTakeFirst(), undefined)

  // A verified account whose proof was not its session's can still prove it: a code typed in it.
  await proveInSession(user)
  t.equal((await userRow(app.db, user.id)).ways_in_unproven, false)
  t.equal((await enable()).statusCode, 200)
  t.equal((await passkeyOptions()).statusCode, 200)
})

t.test('the verification link opened with the session proves the address for it', async (t) => {
  const user = await signUp(app)
  const link = await verificationLink(user)
  t.equal((await call(app, 'GET', `${link.pathname}${link.search}`, { cookie: user.cookie })).statusCode, 200)
  t.equal(
    (await call(app, 'POST', '/api/auth/two-factor/enable', { cookie: user.cookie, body: { password: user.password } }))
      .statusCode,
    200,
  )
})

t.test('a passkey registration whose address proof lapsed meanwhile is refused at the verify step', async (t) => {
  const user = await signUp(app)
  await proveInSession(user)
  const registration = await registrationOf(app, new SoftAuthenticator(WEB_ORIGIN), user.cookie)
  // The proof was typed a day ago by the time the authenticator answers.
  await app.db
    .updateTable('session')
    .set({ email_proven_at: new Date(clock.now().getTime() - ADDRESS_PROOF_MAX_AGE_MS) })
    .where('user_id', '=', user.id)
    .execute()
  const res = await call(app, 'POST', '/api/auth/passkey/verify-registration', {
    cookie: registration.cookie,
    body: { response: registration.response },
  })
  t.equal(res.statusCode, 403, res.body)
  t.equal(res.json().code, 'EMAIL_NOT_PROVEN')
  t.equal(await app.db.selectFrom('passkey').select('id').where('user_id', '=', user.id).executeTakeFirst(), undefined)
})

/** Whether `cookie`'s session may set up TOTP and a passkey: both answers, for the same verdict. */
async function setUpAnswers(user: TestUser, cookie: string) {
  const enable = await call(app, 'POST', '/api/auth/two-factor/enable', { cookie, body: { password: user.password } })
  const passkey = await call(app, 'GET', '/api/auth/passkey/generate-register-options', { cookie })
  // A pending setup started here is the test's to undo, so the next one starts from nothing.
  await app.db.deleteFrom('two_factor').where('user_id', '=', user.id).where('verified', '=', false).execute()
  return [enable, passkey].map((res) => `${res.statusCode} ${res.statusCode === 200 ? '' : res.json().code}`.trim())
}
const PROVEN = ['200', '200']
const NOT_PROVEN = ['403 EMAIL_NOT_PROVEN', '403 EMAIL_NOT_PROVEN']

t.test('a stolen session cannot set up a second factor on an address its owner proved in their own session', async (t) => {
  const owner = await signUp(app)
  await proveInSession(owner) // the owner typed the code in their own browser
  // Elsewhere, whoever learned the password signs in: a session of the same account, proving nothing of the mailbox.
  const stolen = sessionCookieOf(await signInWithPassword(owner, owner.password))!
  t.ok(stolen)
  t.same(await setUpAnswers(owner, stolen), NOT_PROVEN, "the owner's proof is not that session's")
  t.equal(await app.db.selectFrom('two_factor').select('user_id').where('user_id', '=', owner.id).executeTakeFirst(), undefined)
  t.equal(
    await app.db
      .selectFrom('verification')
      .select('id')
      .where('user_id', '=', owner.id)
      .where('purpose', '=', 'passkey-registration')
      .executeTakeFirst(),
    undefined,
    'no ceremony begun',
  )
  t.same(await setUpAnswers(owner, owner.cookie), PROVEN, 'the session that typed the code may')

  // Once it proves the address in its own right, that session may too: here, a code typed in it.
  const otp = await mailedCode(owner.email, 'email-verification')
  const proven = await call(app, 'POST', '/api/auth/email-otp/verify-email', {
    cookie: stolen,
    body: { email: owner.email, otp },
  })
  t.equal(proven.statusCode, 200, proven.body)
  t.same(await setUpAnswers(owner, stolen), PROVEN)
})

t.test("a copied cookie of the owner's proven session is refused once the proof is a day old", async (t) => {
  const owner = await signUp(app)
  await proveInSession(owner)
  t.same(await setUpAnswers(owner, owner.cookie), PROVEN)
  clock.advance(ADDRESS_PROOF_MAX_AGE_MS)
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: owner.cookie })).statusCode, 200, 'the session lives on')
  // A passkey needs a session started within the day as well (session/fresh.ts), which it no longer is.
  t.same(await setUpAnswers(owner, owner.cookie), ['403 EMAIL_NOT_PROVEN', '403 SESSION_NOT_FRESH'], 'its proof does not')
  await proveInSession(owner)
  t.same(await setUpAnswers(owner, owner.cookie), ['200', '403 SESSION_NOT_FRESH'], 'a new code renews it')
})

t.test('a sign-in by an emailed code or sign-in link proves the address for its session; a password does not', async (t) => {
  const user = await signUp(app)
  await proveInSession(user)
  const byCode = sessionCookieOf(await signInWithCode(user.email))!
  const byLink = sessionCookieOf(await signInWithLink(user.email))!
  const byPassword = sessionCookieOf(await signInWithPassword(user, user.password))!
  t.same(await setUpAnswers(user, byCode), PROVEN, 'code')
  t.same(await setUpAnswers(user, byLink), PROVEN, 'link')
  t.same(await setUpAnswers(user, byPassword), NOT_PROVEN, 'password')
  // The verification link opened in the password's session proves it for that session.
  const link = await verificationLink(user)
  t.equal((await call(app, 'GET', `${link.pathname}${link.search}`, { cookie: byPassword })).statusCode, 200)
  t.same(await setUpAnswers(user, byPassword), PROVEN, 'the link opened in it')
})

t.test('an account with a second factor: a session that signed in with it may add another, one without may not', async (t) => {
  const user = await signUp(app)
  await proveInSession(user)
  const authenticator = new SoftAuthenticator(WEB_ORIGIN)
  await registerPasskey(app, authenticator, user.cookie)
  const withPasskey = sessionCookieOf(await signInWithPasskey(app, authenticator))!
  t.same(await setUpAnswers(user, withPasskey), PROVEN, 'a passkey sign-in proved more than the mailbox')
  // A password alone stops at the second step; a session the account already had before its passkey
  // (here one signed in by password, then proven no further) holds neither proof.
  await app.db.updateTable('session').set({ email_proven_at: null }).where('user_id', '=', user.id).execute()
  t.same(await setUpAnswers(user, user.cookie), NOT_PROVEN, 'a session without a proof of either')
  clock.advance(ADDRESS_PROOF_MAX_AGE_MS)
  t.same(await setUpAnswers(user, withPasskey), ['403 EMAIL_NOT_PROVEN', '403 SESSION_NOT_FRESH'], 'a passkey sign-in a day old')
})

t.test('a change of address: the sessions that proved the old address no longer count', async (t) => {
  const user = await signUp(app)
  await proveInSession(user) // verified: the change is approved from the current address first
  const other = sessionCookieOf(await signInWithCode(user.email))!
  t.same(await setUpAnswers(user, other), PROVEN)
  const newEmail = `moved-${user.email}`
  const asked = await call(app, 'POST', '/api/auth/change-email', { cookie: user.cookie, body: { newEmail } })
  t.equal(asked.statusCode, 200, asked.body)
  const approved = await pressApprove(app, await smtp.inbox.next(user.email))
  t.equal(approved.statusCode, 200, approved.body)
  const confirm = linkIn(await smtp.inbox.next(newEmail))
  const confirmed = await call(app, 'GET', `${confirm.pathname}${confirm.search}`, { cookie: user.cookie })
  t.equal(confirmed.headers.location, `${WEB_ORIGIN}/`, "the new address is the account's")
  t.same(await setUpAnswers(user, other), NOT_PROVEN, 'the old address was what it proved')
  t.same(await setUpAnswers(user, user.cookie), PROVEN, "the session that opened the new address's link proved that one")
})

t.test('a take-back leaves an admin a member, audited, and mails the account a notice', async (t) => {
  const admin = await signUp(app)
  await setRole(admin.id, 'admin')
  t.equal((await openWithoutSession(await verificationLink(admin))).statusCode, 200) // verified from the phone
  const res = await signInWithCode(admin.email)
  t.equal(res.statusCode, 200, res.body)
  t.equal(res.json().user.role, 'member', 'the session of the mailbox holder is a member')
  t.equal((await userRow(app.db, admin.id)).role, 'member')
  const admins = await call(app, 'GET', '/api/v1/admin/users', { cookie: sessionCookieOf(res)! })
  t.equal(admins.statusCode, 403, 'no admin route for the mailbox holder')
  const [demoted] = await auditEvents(app.db, { action: 'admin.user.role_changed', targetId: admin.id })
  t.match(demoted?.details, { via: 'take_back', before: { role: 'admin' }, after: { role: 'member' } })
  const [taken] = await auditEvents(app.db, { action: 'auth.account_taken_back', targetId: admin.id })
  t.match(taken?.details, { via: 'email-otp', roleBefore: 'admin' })
  await settled()
  const notice = await smtp.inbox.notices.next(admin.email)
  t.equal(notice.subject, 'Security notice: your account was taken back through its mailbox')
})

t.test('an owner taken back is a member too, the last one included (docs: make one again from the command line)', async (t) => {
  const owner = await signUp(app)
  await setRole(owner.id, 'owner')
  await markUnproven(owner.id)
  await app.db.updateTable('user').set({ email_verified: true }).where('id', '=', owner.id).execute()
  const res = await signInWithLink(owner.email)
  t.equal(res.statusCode, 200, res.body)
  t.equal((await userRow(app.db, owner.id)).role, 'member')
  const [demoted] = await auditEvents(app.db, { action: 'admin.user.role_changed', targetId: owner.id })
  t.match(demoted?.details, { via: 'take_back', before: { role: 'owner' }, after: { role: 'member' } })
})

t.test('recovery without the second factor: an administrator removes it, audited, and the user is told', async (t) => {
  const admin = await signUp(app)
  await setRole(admin.id, 'admin')
  const user = await signUp(app)
  await proveInSession(user)
  await enableTotp(app, user, clock.now())
  await registerPasskey(app, new SoftAuthenticator(WEB_ORIGIN), user.cookie)
  const remove = (id: string, cookie: string, body: unknown = {}) =>
    call(app, 'POST', `/api/v1/admin/users/${id}/remove-second-factor`, { cookie, body })

  // Unhappy paths first: nothing changes.
  const member = await signUp(app)
  t.equal((await remove(user.id, member.cookie)).statusCode, 403, 'a member')
  t.equal((await remove(user.id, '')).statusCode, 401, 'no session')
  t.equal((await remove(user.id, admin.cookie, { id: user.id, extra: true })).statusCode, 400, 'unknown keys')
  t.equal((await remove('no-such-user', admin.cookie)).statusCode, 404)
  t.equal((await remove(admin.id, admin.cookie)).statusCode, 403, 'not their own')
  const owner = await signUp(app)
  await setRole(owner.id, 'owner')
  t.equal((await remove(owner.id, admin.cookie)).statusCode, 403, "not an owner's")
  t.equal((await userRow(app.db, user.id)).two_factor_enabled, true, 'nothing changed')

  const res = await remove(user.id, admin.cookie)
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json(), { twoFactorRemoved: true, passkeysRemoved: 1, sessionsRevoked: 1 })
  t.equal((await userRow(app.db, user.id)).two_factor_enabled, false)
  t.equal(await app.db.selectFrom('passkey').select('id').where('user_id', '=', user.id).executeTakeFirst(), undefined)
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: user.cookie })).statusCode, 401, 'every session ended')
  const [event] = await auditEvents(app.db, { action: 'admin.user.second_factor_removed', targetId: user.id })
  t.match(event, {
    actor_id: admin.id,
    details: { before: { twoFactorEnabled: true, passkeys: 1 }, after: { twoFactorEnabled: false } },
  })
  // The notices of this account so far (its setup's too), until both removals' are in.
  const told = ['Security notice: two-factor authentication was turned off', 'Security notice: a passkey was removed']
  const subjects: string[] = []
  while (!told.every((s) => subjects.includes(s))) subjects.push((await smtp.inbox.notices.next(user.email)).subject)
  t.pass('both removals were mailed')
  // The owner of the mailbox signs in again with a code, and sets a second factor up anew.
  const signedIn = await signInWithCode(user.email)
  t.ok(sessionCookieOf(signedIn), 'no second factor left to ask for')
})
