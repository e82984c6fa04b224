// change-email at parity with better-auth 1.6.34, with the mail read from a real SMTP server: the
// new address must prove itself, a verified account approves from its current address first, the
// old address is told, and a taken address answers the same and mails nobody.
import t from 'tap'
import { newId } from '../../src/shared/ids.js'
import { call, signUp, WEB_ORIGIN } from '../helpers/app.js'
import { authClient } from '../helpers/auth-client.js'
import { auditEvents } from '../helpers/expect.js'
import { linkIn, mailingApp, pressApprove } from '../helpers/smtp.js'

const OWNER_EMAIL = `owner-${newId()}@example.com`.toLowerCase()
const { smtp, clock, app } = await mailingApp({ BOOTSTRAP_OWNER_EMAIL: OWNER_EMAIL })

const fresh = () => `new-${newId()}@example.com`.toLowerCase()
const userRow = (id: string) =>
  app.db.selectFrom('user').select(['email', 'email_verified', 'role']).where('id', '=', id).executeTakeFirstOrThrow()
/** Opens a mailed link; with `cookie`, in a browser signed in to that session. */
const open = (link: URL, cookie?: string) =>
  app.inject({ method: 'GET', url: `${link.pathname}${link.search}`, headers: cookie ? { cookie } : {} })
const markVerified = (id: string) => app.db.updateTable('user').set({ email_verified: true }).where('id', '=', id).execute()

/** A browser with better-auth's client, signed up as a new member. */
async function signedUpClient() {
  const browser = authClient(app)
  const email = `old-${newId()}@example.com`.toLowerCase()
  const res = await browser.client.signUp.email({ name: 'Changer', email, password: 'correct horse battery staple' })
  if (res.error) throw new Error(JSON.stringify(res.error))
  return { ...browser, email, password: 'correct horse battery staple', id: res.data!.user.id }
}

t.test('an unverified account: the new address gets the link, and its use changes the address', async (t) => {
  const me = await signedUpClient()
  const newEmail = fresh()
  const res = await me.client.changeEmail({ newEmail: newEmail.toUpperCase(), callbackURL: '/settings' })
  t.equal(res.error, null, JSON.stringify(res.error))
  t.same(res.data, { status: true })
  await app.settled()
  t.equal((await userRow(me.id)).email, me.email, 'nothing changes before the link is used')
  const mail = await smtp.inbox.next(newEmail)
  t.equal(mail.subject, 'Confirm your new email address')
  t.equal(smtp.inbox.for(me.email).length, 0, 'the current address gets nothing yet')
  const link = linkIn(mail)
  t.equal(`${link.origin}${link.pathname}`, 'http://localhost:8787/api/auth/verify-email', "better-auth's link, on this API")
  t.equal(link.searchParams.get('callbackURL'), `${WEB_ORIGIN}/settings`)

  // Opened without a session of the account (a mail scanner, or someone else's browser): the
  // address must not move to an account its opener does not control. Nothing is spent.
  const elsewhere = await open(link)
  t.same(
    [elsewhere.statusCode, elsewhere.headers.location],
    [302, `${WEB_ORIGIN}/settings?error=SIGN_IN_TO_CONFIRM_EMAIL_CHANGE`],
    'no session of the account: refused, the link stays good',
  )
  t.equal((await userRow(me.id)).email, me.email, 'nothing changed')
  const stranger = await signUp(app)
  t.equal((await open(link, stranger.cookie)).headers.location, `${WEB_ORIGIN}/settings?error=SIGN_IN_TO_CONFIRM_EMAIL_CHANGE`)
  t.equal((await userRow(me.id)).email, me.email, "another account's session does not do either")

  const used = await open(link, me.cookie())
  t.same([used.statusCode, used.headers.location], [302, `${WEB_ORIGIN}/settings`])
  t.same(await userRow(me.id), { email: newEmail, email_verified: true, role: 'member' }, 'changed, and counts as verified')
  const told = await smtp.inbox.next(me.email)
  t.equal(told.subject, 'Your email address was changed')
  t.match(told.text, newEmail)
  t.equal((await me.client.getSession()).data?.user.email, newEmail, 'the session sees it at once')
  const replay = await open(link, me.cookie())
  t.same([replay.statusCode, replay.headers.location], [302, `${WEB_ORIGIN}/settings?error=invalid_token`], 'single use')

  const byNew = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: newEmail, password: me.password } })
  t.equal(byNew.statusCode, 200, 'the new address signs in')
  const byOld = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: me.email, password: me.password } })
  t.equal(byOld.statusCode, 401, 'the old one no longer does')
  const audit = await auditEvents(app.db, { action: 'auth.email_changed', targetId: me.id })
  t.equal(audit.length, 1)
  t.notMatch(JSON.stringify(audit.map((a) => a.details)), /@/, 'no address in the audit log')
})

t.test('a verified account approves from its current address first, then the new one confirms', async (t) => {
  const me = await signedUpClient()
  await markVerified(me.id)
  const newEmail = fresh()
  t.same((await me.client.changeEmail({ newEmail })).data, { status: true })
  const approval = await smtp.inbox.next(me.email)
  t.equal(approval.subject, 'Approve the change of your email address')
  t.match(approval.text, newEmail)
  await app.settled()
  t.equal(smtp.inbox.for(newEmail).length, 0, 'the new address hears nothing before the approval')
  // Its page's button approves (change-email-guards.test.ts: opening the link alone does nothing).
  const approved = await pressApprove(app, approval)
  t.same([approved.statusCode, approved.json()], [200, { status: true }])
  t.equal((await userRow(me.id)).email, me.email, 'approving alone changes nothing')
  const confirm = linkIn(await smtp.inbox.next(newEmail))
  t.equal(confirm.searchParams.get('callbackURL'), `${WEB_ORIGIN}/`, 'the front end home by default')
  t.equal((await pressApprove(app, approval)).json().code, 'INVALID_TOKEN', 'the approval is single use')

  const done = await open(confirm, me.cookie())
  t.equal(done.statusCode, 302)
  t.same(await userRow(me.id), { email: newEmail, email_verified: true, role: 'member' })
  t.equal((await smtp.inbox.next(me.email)).subject, 'Your email address was changed')
})

t.test('an address already in use answers the same, does the same work and mails its holder nothing', async (t) => {
  const me = await signedUpClient()
  const other = await signUp(app)
  const tokensBefore = (await app.db.selectFrom('verification').select('id').execute()).length
  const res = await me.client.changeEmail({ newEmail: other.email })
  t.same([res.error, res.data], [null, { status: true }], 'the answer of a free address')
  await app.settled()
  const tokensAfter = await app.db.selectFrom('verification').select(['id', 'user_id']).execute()
  t.equal(tokensAfter.length, tokensBefore + 1, 'one token written, as for a free address')
  t.equal(smtp.inbox.for(other.email).length + smtp.inbox.for(me.email).length, 0, 'no mail to anyone')
  t.equal((await userRow(me.id)).email, me.email)

  await markVerified(me.id)
  t.same((await me.client.changeEmail({ newEmail: other.email })).data, { status: true })
  // Its holder reads that mailbox: no approval for a taken address would tell them it is taken.
  const approval = await smtp.inbox.next(me.email)
  t.equal(approval.subject, 'Approve the change of your email address', 'a verified account approves as for a free address')
  t.same((await pressApprove(app, approval)).json(), { status: true }, 'the approval answers as any other')
  await app.settled()
  t.equal(smtp.inbox.for(other.email).length, 0, 'the taken address is mailed nothing')
  t.equal((await userRow(me.id)).email, me.email)
})

t.test('an address taken between the request and the link: the link no longer works', async (t) => {
  const me = await signedUpClient()
  const newEmail = fresh()
  await me.client.changeEmail({ newEmail, callbackURL: '/s' })
  const link = linkIn(await smtp.inbox.next(newEmail))
  await signUp(app, { email: newEmail })
  const res = await open(link, me.cookie())
  t.same([res.statusCode, res.headers.location], [302, `${WEB_ORIGIN}/s?error=invalid_token`])
  t.equal((await userRow(me.id)).email, me.email)
})

t.test('links expire after 24 hours; a change ends the links mailed to the old address', async (t) => {
  const me = await signedUpClient()
  const newEmail = fresh()
  await me.client.changeEmail({ newEmail })
  const link = linkIn(await smtp.inbox.next(newEmail))
  clock.set(24 * 3600_000 + 60_000)
  t.equal((await open(link, me.cookie())).headers.location, `${WEB_ORIGIN}/?error=invalid_token`)
  t.equal((await userRow(me.id)).email, me.email)
  clock.set(0)

  await call(app, 'POST', '/api/auth/request-password-reset', { body: { email: me.email } })
  const resetToken = linkIn(await smtp.inbox.next(me.email)).searchParams.get('token')!
  const second = fresh()
  const third = fresh()
  await me.client.changeEmail({ newEmail: second })
  await me.client.changeEmail({ newEmail: third })
  const toSecond = linkIn(await smtp.inbox.next(second))
  const toThird = linkIn(await smtp.inbox.next(third))
  t.equal((await open(toSecond, me.cookie())).statusCode, 302)
  t.equal((await userRow(me.id)).email, second)
  t.equal(
    (await open(toThird, me.cookie())).headers.location,
    `${WEB_ORIGIN}/?error=invalid_token`,
    'the other pending change ended',
  )
  const reset = await call(app, 'POST', '/api/auth/reset-password', {
    body: { token: resetToken, newPassword: 'another long passphrase' },
  })
  t.same([reset.statusCode, reset.json().code], [400, 'INVALID_TOKEN'], 'a reset link mailed to the old address ended')
})

t.test(
  'a change to the bootstrap owner address never makes the owner: the link proves the mailbox, not who holds the account',
  async (t) => {
    // Someone else's account asks for the owner's address: the owner opens the link, unasked, in a
    // browser of their own. The address does not move (the opener does not hold the account).
    const other = await signedUpClient()
    await other.client.changeEmail({ newEmail: OWNER_EMAIL })
    await open(linkIn(await smtp.inbox.next(OWNER_EMAIL)))
    t.same(await userRow(other.id), { email: other.email, email_verified: false, role: 'member' })

    const me = await signedUpClient()
    await me.client.changeEmail({ newEmail: OWNER_EMAIL })
    await open(linkIn(await smtp.inbox.next(OWNER_EMAIL)), me.cookie())
    t.same(await userRow(me.id), { email: OWNER_EMAIL, email_verified: true, role: 'member' }, 'nor when opened signed in')
  },
)

t.test('refusals: no session, same address, bad input, unknown keys, untrusted callback', async (t) => {
  await app.settled()
  const mailsBefore = smtp.inbox.mails.length
  const me = await signedUpClient()
  const anonymous = await call(app, 'POST', '/api/auth/change-email', { body: { newEmail: fresh() } })
  t.same([anonymous.statusCode, anonymous.json().code], [401, 'UNAUTHORIZED'])
  const same = await me.client.changeEmail({ newEmail: me.email.toUpperCase() })
  t.same([same.error?.status, same.error?.code], [400, 'BAD_REQUEST'])
  const bodies = [
    { newEmail: 'not an email' },
    { newEmail: `${'a'.repeat(250)}@example.com` },
    { newEmail: fresh(), email: fresh() },
    { newEmail: fresh(), userId: 'someone' },
    {},
  ]
  for (const body of bodies) {
    const res = await call(app, 'POST', '/api/auth/change-email', { cookie: me.cookie(), body })
    t.same([res.statusCode, res.json().code], [400, 'VALIDATION_ERROR'], JSON.stringify(body).slice(0, 50))
  }
  const untrusted = await me.client.changeEmail({ newEmail: fresh(), callbackURL: 'https://evil.example/' })
  t.same([untrusted.error?.status, untrusted.error?.code], [403, 'INVALID_CALLBACK_URL'])
  await app.settled()
  t.equal(smtp.inbox.mails.length, mailsBefore, 'no refused request mailed anything')
  t.equal((await userRow(me.id)).email, me.email)
})
