// Issue 34, finding 5: a stolen session must not move the account to the thief's address. A change
// of address needs a fresh session (better-auth's freshAge, a day) or the password; the current
// address approves with a page's button (a mail scanner opening the link approves nothing); and an
// unverified account's old address is told, with a link that puts it back.
import t from 'tap'
import { newId } from '../../src/shared/ids.js'
import { call, signUp, WEB_ORIGIN } from '../helpers/app.js'
import { authClient } from '../helpers/auth-client.js'
import { auditEvents } from '../helpers/expect.js'
import { linkIn, mailingApp, pressApprove } from '../helpers/smtp.js'

const { smtp, clock, app } = await mailingApp()

const DAY = 24 * 3600_000
const PASSWORD = 'correct horse battery staple'
const fresh = () => `new-${newId()}@example.com`.toLowerCase()
const userRow = (id: string) =>
  app.db
    .selectFrom('user')
    .select(['email', 'email_verified', 'password_reset_required'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow()
const markVerified = (id: string) => app.db.updateTable('user').set({ email_verified: true }).where('id', '=', id).execute()
const pendingChanges = async (id: string) =>
  (
    await app.db
      .selectFrom('verification')
      .select('purpose')
      .where('user_id', '=', id)
      .where('purpose', 'in', ['change-email-confirmation', 'change-email-verification'])
      .execute()
  ).length
/** A GET as a mail scanner (or a phone's preview) makes it: no cookie, no Origin. */
const scan = (link: URL) => app.inject({ method: 'GET', url: `${link.pathname}${link.search}` })
const changeEmail = (cookie: string, body: Record<string, unknown>) =>
  call(app, 'POST', '/api/auth/change-email', { cookie, body })

async function signedUpClient() {
  const browser = authClient(app)
  const email = `old-${newId()}@example.com`.toLowerCase()
  const res = await browser.client.signUp.email({ name: 'Changer', email, password: PASSWORD })
  if (res.error) throw new Error(JSON.stringify(res.error))
  return { ...browser, email, id: res.data!.user.id }
}

t.test('a session older than a day needs the password to change the address', async (t) => {
  const me = await signedUpClient()
  clock.set(DAY + 60_000)
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: me.cookie() })).statusCode, 200, 'the session still works')

  const stale = await me.client.changeEmail({ newEmail: fresh() })
  t.same([stale.error?.status, stale.error?.code], [403, 'SESSION_NOT_FRESH'], "better-auth's client reads the refusal")
  const wrong = await changeEmail(me.cookie(), { newEmail: fresh(), password: 'not the password' })
  t.same([wrong.statusCode, wrong.json().code], [400, 'INVALID_PASSWORD'])
  await app.settled()
  t.equal(await pendingChanges(me.id), 0, 'nothing issued')
  t.equal(smtp.inbox.mails.length, 0, 'nothing mailed')

  const newEmail = fresh()
  // better-auth's client sends the extra field as it is (its types know only newEmail and callbackURL).
  const withPassword = await me.client.changeEmail({ newEmail, password: PASSWORD } as { newEmail: string })
  t.same([withPassword.error, withPassword.data], [null, { status: true }])
  t.equal((await smtp.inbox.next(newEmail)).subject, 'Confirm your new email address')

  const refused = await auditEvents(app.db, { action: 'auth.email_change_refused', targetId: me.id })
  t.same(
    refused.map((a) => a.details),
    [{ reason: 'SESSION_NOT_FRESH' }, { reason: 'INVALID_PASSWORD' }],
  )
})

t.test('a session signed in within the day changes it without the password; a wrong one given is refused', async (t) => {
  const me = await signedUpClient()
  clock.set(DAY - 60_000)
  const newEmail = fresh()
  t.same((await me.client.changeEmail({ newEmail })).data, { status: true })
  await smtp.inbox.next(newEmail)
  const wrong = await changeEmail(me.cookie(), { newEmail: fresh(), password: 'not the password' })
  t.same([wrong.statusCode, wrong.json().code], [400, 'INVALID_PASSWORD'], 'a password given is checked, never ignored')
})

t.test('an account without a password signs in again to change it', async (t) => {
  const me = await signedUpClient()
  await app.db.updateTable('account').set({ password_hash: null }).where('user_id', '=', me.id).execute()
  clock.set(DAY + 60_000)
  const res = await changeEmail(me.cookie(), { newEmail: fresh(), password: PASSWORD })
  t.same([res.statusCode, res.json().code], [400, 'CREDENTIAL_ACCOUNT_NOT_FOUND'])
  const stale = await changeEmail(me.cookie(), { newEmail: fresh() })
  t.same([stale.statusCode, stale.json().code], [403, 'SESSION_NOT_FRESH'])
})

t.test("the current address's approval link opens a page: a scanner approves nothing, the button does", async (t) => {
  const me = await signedUpClient()
  await markVerified(me.id)
  const newEmail = fresh()
  t.same((await me.client.changeEmail({ newEmail, callbackURL: '/settings' })).data, { status: true })
  const approval = await smtp.inbox.next(me.email)
  const link = linkIn(approval)

  for (let i = 0; i < 3; i++) {
    const page = await scan(link)
    t.equal(page.statusCode, 200)
    t.match(page.headers['content-type'], /^text\/html/)
    t.match(page.headers['content-security-policy'], /frame-ancestors 'none'/)
    t.equal(page.headers['x-frame-options'], 'DENY')
    t.equal(page.headers['referrer-policy'], 'no-referrer')
    t.match(page.body, /<button id="approve"/)
    t.match(page.body, newEmail, 'the page says where the account would move')
  }
  await app.settled()
  t.equal(smtp.inbox.for(newEmail).length, 0, 'opening the link sent nothing to the new address')
  t.equal(await pendingChanges(me.id), 1, 'and spent nothing')
  t.equal(link.pathname, '/api/auth/change-email/approve')
  t.equal(link.searchParams.get('callbackURL'), null, 'where to go next is kept with the token, not in the link')

  const approve = () => pressApprove(app, approval)
  const approved = await approve()
  t.same([approved.statusCode, approved.json()], [200, { status: true }])
  const confirm = linkIn(await smtp.inbox.next(newEmail))
  t.equal(confirm.searchParams.get('callbackURL'), `${WEB_ORIGIN}/settings`, 'the new address lands where asked')
  t.equal((await userRow(me.id)).email, me.email, 'approving alone changes nothing')
  const again = await approve()
  t.same([again.statusCode, again.json().code], [400, 'INVALID_TOKEN'], 'single use')
  t.equal((await scan(link)).statusCode, 400, 'the used link shows the dead page')
  t.equal(
    (await app.inject({ method: 'GET', url: `/api/auth/verify-email?token=${link.searchParams.get('token')}` })).statusCode,
    400,
    'the approval is no verify-email token',
  )
})

t.test('an approval link is dead once the account moved to another address', async (t) => {
  const me = await signedUpClient()
  await markVerified(me.id)
  await me.client.changeEmail({ newEmail: fresh() })
  const approval = await smtp.inbox.next(me.email)
  await app.db.updateTable('user').set({ email: fresh() }).where('id', '=', me.id).execute()
  t.equal((await scan(linkIn(approval))).statusCode, 400)
  const res = await pressApprove(app, approval)
  t.same([res.statusCode, res.json().code], [400, 'INVALID_TOKEN'])
})

t.test('the approval refuses bad input, unknown keys and foreign origins', async (t) => {
  for (const payload of [{}, { token: '' }, { token: 'x'.repeat(300) }, { token: 'abc', extra: 1 }]) {
    const res = await call(app, 'POST', '/api/auth/change-email/approve', { body: payload })
    t.same([res.statusCode, res.json().code], [400, 'VALIDATION_ERROR'], JSON.stringify(payload).slice(0, 40))
  }
  const unknown = await call(app, 'POST', '/api/auth/change-email/approve', { body: { token: 'unknown-token' } })
  t.same([unknown.statusCode, unknown.json().code], [400, 'INVALID_TOKEN'])
  const foreign = await call(app, 'POST', '/api/auth/change-email/approve', {
    body: { token: 'unknown-token' },
    headers: { origin: 'https://evil.example' },
  })
  t.same([foreign.statusCode, foreign.json().code], [403, 'INVALID_ORIGIN'])
  t.equal((await app.inject({ method: 'GET', url: '/api/auth/change-email/approve' })).statusCode, 400)
})

/** An unverified account moved to a new address through its session: the old address's notice token. */
async function movedUnverified() {
  const me = await signedUpClient()
  const newEmail = fresh()
  await me.client.changeEmail({ newEmail })
  const confirm = linkIn(await smtp.inbox.next(newEmail))
  const done = await app.inject({ method: 'GET', url: `${confirm.pathname}${confirm.search}`, headers: { cookie: me.cookie() } })
  if (done.statusCode !== 302 || (await userRow(me.id)).email !== newEmail) throw new Error('the change did not complete')
  await smtp.inbox.next(me.email) // "Your email address was changed"
  const notice = await smtp.inbox.notices.next(me.email)
  return { me, newEmail, notice, token: linkIn(notice).searchParams.get('token')! }
}

const undo = (token: string) =>
  app.inject({
    method: 'POST',
    url: '/api/auth/secure-account',
    headers: { origin: 'http://localhost:8787' },
    payload: { token },
  })

t.test("an unverified account's change tells the old address, whose undo puts it back", async (t) => {
  const { me, newEmail, notice, token } = await movedUnverified()
  t.equal(notice.subject, 'Security notice: your email address was changed')
  t.match(notice.text, /registered with this address/)
  t.match(notice.text, /If you never registered an account with this address, ignore this email/)
  t.notMatch(notice.text, newEmail, 'the unproven old address is not told where the account went')
  t.equal(linkIn(notice).pathname, '/api/auth/security-notice')

  const page = await scan(linkIn(notice))
  t.equal(page.statusCode, 200)
  t.match(page.body, /registered with this address/)
  t.equal((await userRow(me.id)).email, newEmail, 'opening the link changes nothing')

  const res = await undo(token)
  t.equal(res.statusCode, 200, res.body)
  t.same(
    await userRow(me.id),
    { email: me.email, email_verified: false, password_reset_required: true },
    'the old address is back as it was: unverified',
  )
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: me.cookie() })).statusCode, 401, 'every session ended')
  t.equal((await smtp.inbox.next(me.email)).subject, 'Reset your password', 'the reset link goes to the address put back')
  t.same(smtp.inbox.for(newEmail), [])
  t.match((await auditEvents(app.db, { action: 'auth.account_secured', targetId: me.id }))[0], {
    details: { notice: 'email_changed', addressRestored: true },
  })
  t.equal((await undo(token)).statusCode, 400, 'single use')
})

t.test('the undo cannot put back an address taken meanwhile: 409, nothing changes, the link stays good', async (t) => {
  const { me, newEmail, token } = await movedUnverified()
  const squatter = await signUp(app, { email: me.email })
  const res = await undo(token)
  t.same([res.statusCode, res.json().code], [409, 'ADDRESS_TAKEN'])
  t.same(await userRow(me.id), { email: newEmail, email_verified: true, password_reset_required: false })
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: me.cookie() })).statusCode, 200, 'no session ended')
  await app.settled()
  t.same(smtp.inbox.for(newEmail), [], 'no reset link to the address the account moved to')

  await app.db.deleteFrom('user').where('id', '=', squatter.id).execute()
  const later = await undo(token)
  t.equal(later.statusCode, 200, 'once the address is free again the link works')
  t.equal((await userRow(me.id)).email, me.email)
})

t.test('two presses of one approval at once: one approves, one mail goes out', async (t) => {
  const me = await signedUpClient()
  await markVerified(me.id)
  const newEmail = fresh()
  await me.client.changeEmail({ newEmail })
  const approval = await smtp.inbox.next(me.email)
  const press = () => pressApprove(app, approval)
  const answers = await Promise.all([press(), press(), press()])
  t.same(answers.map((a) => a.statusCode).sort(), [200, 400, 400])
  await app.settled()
  t.equal(smtp.inbox.for(newEmail).length, 1, 'one link to the new address')
  t.equal(await pendingChanges(me.id), 1, 'one pending confirmation')
})

t.test('an undo and the completion of another change race: the account ends in one consistent state', async (t) => {
  const { me, newEmail, token } = await movedUnverified()
  const further = fresh()
  const asked = await changeEmail(me.cookie(), { newEmail: further })
  t.equal(asked.statusCode, 200)
  // The account is verified at its new address now: that address approves first.
  t.equal((await pressApprove(app, await smtp.inbox.next(newEmail))).statusCode, 200)
  const confirm = linkIn(await smtp.inbox.next(further))
  const [undone, moved] = await Promise.all([
    undo(token),
    app.inject({ method: 'GET', url: `${confirm.pathname}${confirm.search}`, headers: { cookie: me.cookie() } }),
  ])
  const row = await userRow(me.id)
  if (undone.statusCode === 200) {
    t.same(
      row,
      { email: me.email, email_verified: false, password_reset_required: true },
      'the undo won: the old address is back',
    )
    t.match(
      moved.headers.location ?? '',
      /error=/,
      'the later change found the account gone from its address or its session ended',
    )
  } else {
    t.equal(undone.statusCode, 400, 'the change won: the undo no longer matches the address')
    t.equal(row.email, further)
  }
  t.notSame(row.email, newEmail, 'never left half-way')
})
