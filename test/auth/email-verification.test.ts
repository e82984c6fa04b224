// Email verification through a real SMTP server, REQUIRE_EMAIL_VERIFICATION, and the bootstrap
// owner (BOOTSTRAP_OWNER_EMAIL), which needs a verified email and a password its prover holds.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { newId } from '../../src/shared/ids.js'
import { buildTestApp, call, sessionCookieOf, signUp, uniqueEmail, WEB_ORIGIN } from '../helpers/app.js'
import { linkIn, resetThroughMailbox, startSmtpServer } from '../helpers/smtp.js'
import { auditEvents, verificationsOf } from '../helpers/expect.js'

const smtp = await startSmtpServer()
const app = await buildTestApp({ env: { SMTP_URL: smtp.url } })
const PASSWORD = 'correct horse battery staple'

const sendVerification = (a: FastifyInstance, body: Record<string, unknown>) =>
  call(a, 'POST', '/api/auth/send-verification-email', { body })
/** Opens a mailed link; with `cookie`, in a browser signed in to that session. */
const open = (a: FastifyInstance, link: URL, cookie?: string) =>
  a.inject({ method: 'GET', url: `${link.pathname}${link.search}`, headers: cookie ? { cookie } : {} })
const userRow = (id: string) =>
  app.db.selectFrom('user').select(['email_verified', 'role']).where('id', '=', id).executeTakeFirstOrThrow()

t.test('a verification link from the mail marks the email verified, once', async (t) => {
  const user = await signUp(app)
  const res = await sendVerification(app, { email: user.email })
  t.same(res.json(), { status: true })
  const mail = await smtp.inbox.next(user.email)
  t.equal(mail.subject, 'Verify your email address')
  const link = linkIn(mail)
  t.equal(`${link.origin}${link.pathname}`, 'http://localhost:8787/api/auth/verify-email', 'served by this API (AUTH_URL)')
  const row = await verificationsOf(app.db, user.id).executeTakeFirstOrThrow()
  t.ok(Math.abs(row.expires_at.getTime() - row.created_at.getTime() - 24 * 3600_000) < 60_000, 'valid 24 hours')

  const verified = await open(app, link)
  t.equal(verified.statusCode, 200)
  t.same(verified.json(), { status: true })
  t.equal((await userRow(user.id)).email_verified, true)
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: user.cookie })).json().emailVerified, true)

  const again = await open(app, link)
  t.equal(again.statusCode, 400)
  t.match(again.json(), { code: 'INVALID_TOKEN', status: 400 })
})

t.test('with callbackURL the link redirects to the web front end, also with an error', async (t) => {
  const user = await signUp(app)
  await sendVerification(app, { email: user.email, callbackURL: '/welcome' })
  const link = linkIn(await smtp.inbox.next(user.email))
  t.equal(link.searchParams.get('callbackURL'), `${WEB_ORIGIN}/welcome`, 'the resolved URL, never the raw value')
  const res = await open(app, link)
  t.equal(res.statusCode, 302)
  t.equal(res.headers.location, `${WEB_ORIGIN}/welcome`)
  const used = await open(app, link)
  t.equal(used.statusCode, 302)
  t.equal(used.headers.location, `${WEB_ORIGIN}/welcome?error=invalid_token`)
})

t.test('an untrusted callbackURL is refused, at request and at the link', async (t) => {
  const user = await signUp(app)
  const res = await sendVerification(app, { email: user.email, callbackURL: 'https://evil.example/' })
  t.equal(res.statusCode, 403)
  t.match(res.json(), { code: 'INVALID_CALLBACK_URL' })
  await sendVerification(app, { email: user.email })
  const link = linkIn(await smtp.inbox.next(user.email))
  link.searchParams.set('callbackURL', 'https://evil.example/')
  const opened = await open(app, link)
  t.equal(opened.statusCode, 403)
  t.match(opened.json(), { code: 'INVALID_CALLBACK_URL' })
  t.equal((await userRow(user.id)).email_verified, false, 'nothing was verified')
})

t.test('an expired verification token is refused', async (t) => {
  const user = await signUp(app)
  await sendVerification(app, { email: user.email })
  const link = linkIn(await smtp.inbox.next(user.email))
  await app.db
    .updateTable('verification')
    .set({ expires_at: new Date(Date.now() - 1000) })
    .where('user_id', '=', user.id)
    .execute()
  const res = await open(app, link)
  t.equal(res.statusCode, 400)
  t.match(res.json(), { code: 'INVALID_TOKEN' })
  t.equal((await userRow(user.id)).email_verified, false)
})

t.test('the answer is the same for an unknown, a verified and an unverified email; both accounts get mail', async (t) => {
  const unverified = await signUp(app)
  const verified = await signUp(app)
  await app.db.updateTable('user').set({ email_verified: true }).where('id', '=', verified.id).execute()
  const nobody = uniqueEmail('nobody')
  const answers = await Promise.all([unverified.email, verified.email, nobody].map((email) => sendVerification(app, { email })))
  t.same(
    answers.map((a) => a.statusCode),
    [200, 200, 200],
  )
  t.same(new Set(answers.map((a) => a.body)).size, 1)
  await smtp.inbox.next(unverified.email)
  // A verified account too: the link opened in one of its sessions proves the address for that session.
  await smtp.inbox.next(verified.email)
  await app.settled()
  t.same(smtp.inbox.for(nobody), [])
})

t.test('verify-email refuses a missing token or unknown keys', async (t) => {
  for (const url of ['/api/auth/verify-email', '/api/auth/verify-email?token=', '/api/auth/verify-email?token=x&userId=y']) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 400, url)
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }
})

t.test('REQUIRE_EMAIL_VERIFICATION: sign-up sets no cookie and mails a link; sign-in waits for it', async (t) => {
  const strict = await buildTestApp({ env: { SMTP_URL: smtp.url, REQUIRE_EMAIL_VERIFICATION: 'true' } })
  const email = uniqueEmail('strict')
  const signUpRes = await call(strict, 'POST', '/api/auth/sign-up/email', {
    body: { name: 'Strict', email, password: PASSWORD, callbackURL: '/hello' },
  })
  t.equal(signUpRes.statusCode, 200)
  t.match(signUpRes.json(), { token: null, user: { email, emailVerified: false } })
  t.notOk(sessionCookieOf(signUpRes), 'no session before verification')
  const first = linkIn(await smtp.inbox.next(email))
  t.equal(first.searchParams.get('callbackURL'), `${WEB_ORIGIN}/hello`)

  const early = await call(strict, 'POST', '/api/auth/sign-in/email', { body: { email, password: PASSWORD } })
  t.equal(early.statusCode, 403)
  t.match(early.json(), { code: 'EMAIL_NOT_VERIFIED', status: 403 })
  t.notOk(sessionCookieOf(early))
  const resent = linkIn(await smtp.inbox.next(email))
  t.not(resent.searchParams.get('token'), first.searchParams.get('token'), 'sign-in sent a fresh link')
  const wrong = await call(strict, 'POST', '/api/auth/sign-in/email', { body: { email, password: 'not the password' } })
  t.equal(wrong.statusCode, 401, 'a wrong password learns nothing about verification')

  t.equal((await open(strict, first)).statusCode, 302)
  const late = await call(strict, 'POST', '/api/auth/sign-in/email', { body: { email, password: PASSWORD } })
  t.equal(late.statusCode, 200)
  t.ok(sessionCookieOf(late))
})

t.test('BOOTSTRAP_OWNER_EMAIL: the sign-up becomes owner through a password reset, never through a link', async (t) => {
  const ownerEmail = uniqueEmail('owner')
  const boot = await buildTestApp({ env: { SMTP_URL: smtp.url, BOOTSTRAP_OWNER_EMAIL: ownerEmail } })
  const user = await signUp(boot, { email: ownerEmail })
  t.equal((await userRow(user.id)).role, 'member', 'an unverified sign-up is not owner')
  const link = linkIn(await smtp.inbox.next(ownerEmail)) // sent at sign-up, unasked, for this address
  // Even in the browser signed in to the account: the session may have come through a way in that
  // is gone, or be someone else's way in besides the owner's.
  t.equal((await open(boot, link, user.cookie)).statusCode, 200)
  t.same(await userRow(user.id), { email_verified: true, role: 'member' })

  t.equal((await resetThroughMailbox(boot, smtp.inbox, ownerEmail, 'the owner chose this one')).statusCode, 200)
  t.same(await userRow(user.id), { email_verified: true, role: 'owner' })
  const audit = await auditEvents(boot.db, { action: 'admin.user.role_changed', targetId: user.id })
  t.equal(audit.length, 1)
  t.match(audit[0]!.details, { via: 'bootstrap_owner_email', before: { role: 'member' }, after: { role: 'owner' } })
  const signIn = await call(boot, 'POST', '/api/auth/sign-in/email', {
    body: { email: ownerEmail, password: 'the owner chose this one' },
  })
  t.equal(signIn.json().user.role, 'owner')

  const other = await signUp(boot)
  await resetThroughMailbox(boot, smtp.inbox, other.email, 'another long passphrase')
  t.equal((await userRow(other.id)).role, 'member', 'another address stays member')
})

t.test('BOOTSTRAP_OWNER_EMAIL: whoever signed up first with the address never becomes owner through its mailbox', async (t) => {
  // The squatter signs up with the owner's address and waits; the real owner opens the mail our
  // service sent at that sign-up (genuine, though never asked for) in a browser of their own.
  const ownerEmail = uniqueEmail('squatted-owner')
  const lines: string[] = []
  const boot = await buildTestApp({
    env: { SMTP_URL: smtp.url, BOOTSTRAP_OWNER_EMAIL: ownerEmail, LOG_LEVEL: 'warn' },
    deps: { logStream: { write: (line: string) => void lines.push(line) } },
  })
  const squatter = await signUp(boot, { email: ownerEmail, password: 'the squatter chose this one' })
  const link = linkIn(await smtp.inbox.next(ownerEmail))
  t.equal((await open(boot, link)).statusCode, 200, 'the address is verified')
  t.same(await userRow(squatter.id), { email_verified: true, role: 'member' }, 'but the account is not owner')
  const signIn = await call(boot, 'POST', '/api/auth/sign-in/email', {
    body: { email: ownerEmail, password: 'the squatter chose this one' },
  })
  t.equal(signIn.statusCode, 200)
  t.equal(signIn.json().user.role, 'member', "the squatter's password signs in to a member")
  t.ok(
    lines.some((l) =>
      JSON.parse(l).msg?.includes(
        'BOOTSTRAP_OWNER_EMAIL: the account becomes owner once its password is reset from that mailbox',
      ),
    ),
    'the operator is told why and what to do',
  )
  t.same(await auditEvents(boot.db, { action: 'admin.user.role_changed', targetId: squatter.id }), [])

  // The mailbox holder resets the password: now the only way in is theirs, and the account is owner.
  const reset = await resetThroughMailbox(boot, smtp.inbox, ownerEmail, 'the owner chose this one')
  t.equal(reset.statusCode, 200)
  t.equal((await userRow(squatter.id)).role, 'owner')
  t.equal(
    (await call(boot, 'GET', '/api/v1/whoami', { cookie: squatter.cookie })).statusCode,
    401,
    "the squatter's sessions ended",
  )
  t.equal((await call(boot, 'GET', '/api/v1/whoami', { cookie: sessionCookieOf(signIn)! })).statusCode, 401)
  const old = await call(boot, 'POST', '/api/auth/sign-in/email', {
    body: { email: ownerEmail, password: 'the squatter chose this one' },
  })
  t.equal(old.statusCode, 401, "the squatter's password is gone")
})

t.test('BOOTSTRAP_OWNER_EMAIL: a reset of a never-verified address proves it and makes the owner', async (t) => {
  const ownerEmail = uniqueEmail('unverified-owner')
  const boot = await buildTestApp({ env: { SMTP_URL: smtp.url, BOOTSTRAP_OWNER_EMAIL: ownerEmail } })
  const user = await signUp(boot, { email: ownerEmail })
  await smtp.inbox.next(ownerEmail) // the verification mail, left unopened
  t.equal((await resetThroughMailbox(boot, smtp.inbox, ownerEmail, 'another long passphrase')).statusCode, 200)
  t.same(await userRow(user.id), { email_verified: true, role: 'owner' })
})

t.test('BOOTSTRAP_OWNER_EMAIL at start-up: nobody is promoted; the log says what the account still needs', async (t) => {
  // Nothing at start-up shows who holds an existing account's ways in: a verified address may have
  // been proven by a real owner who opened a mail they never asked for.
  const boot = async (email: string) => {
    const lines: string[] = []
    await buildTestApp({
      env: { BOOTSTRAP_OWNER_EMAIL: email, LOG_LEVEL: 'info' },
      deps: { logStream: { write: (line: string) => void lines.push(line) } },
    })
    return lines.map((l) => JSON.parse(l).msg as string).filter((m) => m?.startsWith('BOOTSTRAP_OWNER_EMAIL'))
  }
  const verified = await signUp(app, { email: uniqueEmail('existing-owner') })
  await app.db.updateTable('user').set({ email_verified: true }).where('id', '=', verified.id).execute()
  t.match(await boot(verified.email.toUpperCase()), [/password is reset from that mailbox/])
  t.equal((await userRow(verified.id)).role, 'member')

  const withoutPassword = newId()
  const email = uniqueEmail('no-password')
  await app.db
    .insertInto('user')
    .values({ id: withoutPassword, name: 'Owner', email, image: null, email_verified: true })
    .execute()
  await boot(email)
  t.equal((await userRow(withoutPassword)).role, 'member')

  t.match(await boot(uniqueEmail('nobody-yet')), [/no account yet; sign up with this address/])
  await app.db.updateTable('user').set({ role: 'owner' }).where('id', '=', verified.id).execute()
  t.same(await boot(verified.email), [], 'an owner already: nothing to say')
})
