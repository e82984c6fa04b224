// Password reset through a real SMTP server on loopback: the link from the received mail,
// single use, expiry, sessions ended, PASSWORD_RESET_REQUIRED accounts.
import t from 'tap'
import { newId } from '../../src/shared/ids.js'
import { buildTestApp, call, signUp, uniqueEmail, WEB_ORIGIN } from '../helpers/app.js'
import { linkIn, startSmtpServer } from '../helpers/smtp.js'
import { auditEvents, userRow, verificationsOf } from '../helpers/expect.js'

const smtp = await startSmtpServer()
const app = await buildTestApp({ env: { SMTP_URL: smtp.url } })
const PASSWORD = 'correct horse battery staple'
const NEW_PASSWORD = 'a new and better passphrase'

const requestReset = (body: Record<string, unknown>) => call(app, 'POST', '/api/auth/request-password-reset', { body })
const reset = (token: string, newPassword = NEW_PASSWORD) =>
  call(app, 'POST', '/api/auth/reset-password', { body: { token, newPassword } })
const signIn = (email: string, password: string) => call(app, 'POST', '/api/auth/sign-in/email', { body: { email, password } })

async function resetTokenFor(email: string, body: Record<string, unknown> = {}) {
  const res = await requestReset({ email, ...body })
  if (res.statusCode !== 200) throw new Error(res.body)
  const link = linkIn(await smtp.inbox.next(email))
  return { link, token: link.searchParams.get('token')! }
}

t.test('a reset mail links to the web front end; the token sets a new password once and ends every session', async (t) => {
  const user = await signUp(app, { password: PASSWORD })
  const second = await signIn(user.email, PASSWORD)
  t.equal(second.statusCode, 200)
  const res = await requestReset({ email: user.email })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { status: true })
  const mail = await smtp.inbox.next(user.email)
  t.equal(mail.subject, 'Reset your password')
  const link = linkIn(mail)
  t.equal(`${link.origin}${link.pathname}`, `${WEB_ORIGIN}/reset-password`)
  const token = link.searchParams.get('token')!
  t.match(token, /^[A-Za-z0-9_-]{43}$/, '256 random bits')

  // The second sign-in, from a new device, was mailed a security notice: its link is a row too.
  const row = await verificationsOf(app.db, user.id).where('purpose', '<>', 'security-notice').executeTakeFirstOrThrow()
  t.equal(row.purpose, 'reset-password')
  t.not(row.token_hash, token, 'only a hash is stored')
  const ttl = row.expires_at.getTime() - row.created_at.getTime()
  t.ok(Math.abs(ttl - 3600_000) < 60_000, `valid one hour (${ttl} ms)`)

  const done = await reset(token)
  t.equal(done.statusCode, 200)
  t.same(done.json(), { status: true })
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: user.cookie })).statusCode, 401, 'the old session ended')
  t.equal(
    await app.db
      .selectFrom('session')
      .select('id')
      .where('user_id', '=', user.id)
      .execute()
      .then((r) => r.length),
    0,
    'every session ended',
  )
  t.equal((await signIn(user.email, PASSWORD)).statusCode, 401, 'the old password is gone')
  t.equal((await signIn(user.email, NEW_PASSWORD)).statusCode, 200)

  const again = await reset(token, 'yet another passphrase')
  t.equal(again.statusCode, 400)
  t.match(again.json(), { code: 'INVALID_TOKEN', status: 400 })
  t.equal((await signIn(user.email, NEW_PASSWORD)).statusCode, 200, 'a used token changed nothing')

  const audit = await auditEvents(app.db, { action: 'auth.password_reset', targetId: user.id })
  t.equal(audit.length, 1)
  t.notOk(JSON.stringify(audit[0]!.details).includes(token))
})

t.test('an unknown email gets the same answer and no mail', async (t) => {
  const user = await signUp(app)
  const known = await requestReset({ email: user.email })
  const nobody = uniqueEmail('nobody')
  const decoys = () =>
    app.db
      .selectFrom('verification')
      .select('id')
      .where('user_id', 'is', null)
      .execute()
      .then((r) => r.length)
  const before = await decoys()
  const unknown = await requestReset({ email: nobody })
  t.equal(unknown.statusCode, known.statusCode)
  t.equal(unknown.body, known.body)
  t.same(Object.keys(unknown.headers).sort(), Object.keys(known.headers).sort(), 'the same headers')
  await smtp.inbox.next(user.email)
  await app.settled()
  t.same(smtp.inbox.for(nobody), [])
  // The same database work as for an account: a token nobody holds, bound to no user.
  t.equal(await decoys(), before + 1)
})

t.test('redirectTo: a relative path opens on the web front end, an untrusted URL is refused', async (t) => {
  const user = await signUp(app)
  const { link } = await resetTokenFor(user.email, { redirectTo: '/account/new-password' })
  t.equal(`${link.origin}${link.pathname}`, `${WEB_ORIGIN}/account/new-password`)
  const absolute = await resetTokenFor(user.email, { redirectTo: `${WEB_ORIGIN}/r?x=1` })
  t.equal(absolute.link.searchParams.get('x'), '1', 'its own query is kept')
  for (const redirectTo of ['https://evil.example/steal', '//evil.example/x', 'javascript:alert(1)']) {
    const res = await requestReset({ email: user.email, redirectTo })
    t.equal(res.statusCode, 403, redirectTo)
    t.match(res.json(), { code: 'INVALID_CALLBACK_URL' })
  }
  await app.settled()
  t.same(smtp.inbox.for(user.email), [], 'no mail for a refused request')
})

t.test('an expired token is refused', async (t) => {
  const user = await signUp(app, { password: PASSWORD })
  const { token } = await resetTokenFor(user.email)
  await app.db
    .updateTable('verification')
    .set({ expires_at: new Date(Date.now() - 1000) })
    .where('user_id', '=', user.id)
    .execute()
  const res = await reset(token)
  t.equal(res.statusCode, 400)
  t.match(res.json(), { code: 'INVALID_TOKEN' })
  t.equal((await signIn(user.email, PASSWORD)).statusCode, 200, 'the password is unchanged')
})

t.test('a made-up token, a verification token or a malformed body is refused', async (t) => {
  const user = await signUp(app)
  t.match((await reset('A'.repeat(43))).json(), { code: 'INVALID_TOKEN', status: 400 })
  await call(app, 'POST', '/api/auth/send-verification-email', { body: { email: user.email } })
  const verifyToken = linkIn(await smtp.inbox.next(user.email)).searchParams.get('token')!
  t.match((await reset(verifyToken)).json(), { code: 'INVALID_TOKEN' }, 'a token only serves its own purpose')
  const { token } = await resetTokenFor(user.email)
  for (const body of [{ token }, { token, newPassword: 'short' }, { token, newPassword: NEW_PASSWORD, userId: user.id }, {}]) {
    const res = await call(app, 'POST', '/api/auth/reset-password', { body })
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }
  t.equal((await reset(token)).statusCode, 200, 'the token survived the refused attempts')
})

t.test('a newer reset leaves no older link usable', async (t) => {
  const user = await signUp(app)
  const first = await resetTokenFor(user.email)
  const second = await resetTokenFor(user.email)
  t.equal((await reset(second.token)).statusCode, 200)
  t.match((await reset(first.token)).json(), { code: 'INVALID_TOKEN' })
})

t.test('an account flagged PASSWORD_RESET_REQUIRED gets a reset mail at sign-in and is cleared by the reset', async (t) => {
  const user = await signUp(app, { password: PASSWORD })
  await app.db.updateTable('user').set({ password_reset_required: true }).where('id', '=', user.id).execute()
  const wrong = await signIn(user.email, 'a wrong guess at it')
  t.equal(wrong.statusCode, 401, 'a wrong password learns nothing')
  const res = await signIn(user.email, PASSWORD)
  t.equal(res.statusCode, 403)
  t.match(res.json(), { code: 'PASSWORD_RESET_REQUIRED' })
  const token = linkIn(await smtp.inbox.next(user.email)).searchParams.get('token')!
  t.equal((await reset(token)).statusCode, 200)
  t.equal((await userRow(app.db, user.id)).password_reset_required, false)
  t.equal((await signIn(user.email, NEW_PASSWORD)).statusCode, 200)
})

t.test('a reset gives an account without a password (identity provider only) its first password', async (t) => {
  const id = newId()
  const email = uniqueEmail('idp')
  await app.db.insertInto('user').values({ id, name: 'Provider user', email, image: null, email_verified: true }).execute()
  const { token } = await resetTokenFor(email)
  t.equal((await reset(token)).statusCode, 200)
  t.equal((await signIn(email, NEW_PASSWORD)).statusCode, 200)
})

t.test('an unreachable SMTP server never fails the request', async (t) => {
  const down = await buildTestApp({ env: { SMTP_URL: 'smtp://127.0.0.1:1' } })
  const user = await signUp(down)
  const res = await call(down, 'POST', '/api/auth/request-password-reset', { body: { email: user.email } })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { status: true })
  await down.settled()
})

t.test('without SMTP_URL the mail, link included, is written to the log', async (t) => {
  const lines: string[] = []
  const logged = await buildTestApp({
    env: { LOG_LEVEL: 'info' },
    deps: { logStream: { write: (line: string) => void lines.push(line) } },
  })
  const user = await signUp(logged)
  await call(logged, 'POST', '/api/auth/request-password-reset', { body: { email: user.email } })
  await logged.settled()
  const line = lines.map((l) => JSON.parse(l)).find((l) => l.mail?.to === user.email)
  t.ok(line, 'a log line carries the mail')
  t.equal(line.level, 30, 'at info level')
  t.match(line.mail.text, new RegExp(`${WEB_ORIGIN}/reset-password\\?token=[A-Za-z0-9_-]{43}`))
})
