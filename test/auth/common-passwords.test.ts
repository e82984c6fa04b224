// Common passwords: a new password among @zxcvbn-ts/language-common's 49,233 is refused with 400
// PASSWORD_COMPROMISED (better-auth's haveibeenpwned plugin's code and message) on every path that
// sets one, checked offline and case-insensitively, with nothing written.
import t from 'tap'
import { OFFLINE } from '../../src/auth/password/password.js'
import { isCommonPassword } from '../../src/auth/password/common.js'
import { buildTestApp, call, signUp, uniqueEmail } from '../helpers/app.js'
import { linkIn, startSmtpServer } from '../helpers/smtp.js'

const smtp = await startSmtpServer()
const app = await buildTestApp({ env: { SMTP_URL: smtp.url } })
const STRONG = 'a long and unusual passphrase 7'
const COMPROMISED = {
  code: 'PASSWORD_COMPROMISED',
  status: 400,
  message: 'The password you entered has been compromised. Please choose a different password.',
  defined: false,
}

const signIn = (email: string, password: string) => call(app, 'POST', '/api/auth/sign-in/email', { body: { email, password } })
const passwordHashOf = async (userId: string) =>
  (await app.db.selectFrom('account').select('password_hash').where('user_id', '=', userId).executeTakeFirstOrThrow())
    .password_hash

t.test('the list: the common ones in any case, not a strong passphrase', async (t) => {
  for (const p of ['password123', 'PASSWORD123', 'PassWord123', 'iloveyou', 'Trustno1', 'qwertyuiop']) {
    t.ok(isCommonPassword(p), p)
  }
  // NFKC, as the password is hashed: full-width letters are the same password.
  t.ok(isCommonPassword('ｐａｓｓｗｏｒｄ１２３'), 'full-width password123')
  for (const p of [STRONG, 'correct horse battery staple', 'password123!x9', '']) t.notOk(isCommonPassword(p), p)
})

t.test('sign-up with a common password: 400, no user', async (t) => {
  for (const password of ['password123', 'Password123', 'SUNSHINE1']) {
    const email = uniqueEmail('common')
    const res = await call(app, 'POST', '/api/auth/sign-up/email', { body: { name: 'Common', email, password } })
    t.equal(res.statusCode, 400, password)
    t.same(res.json(), COMPROMISED, password)
    t.equal(res.headers['set-cookie'], undefined, 'no cookie')
    t.equal(await app.db.selectFrom('user').select('id').where('email', '=', email).executeTakeFirst(), undefined, 'no user row')
  }
  const ok = await call(app, 'POST', '/api/auth/sign-up/email', {
    body: { name: 'Strong', email: uniqueEmail(), password: STRONG },
  })
  t.equal(ok.statusCode, 200, 'a strong password is accepted')
})

t.test('reset-password with a common password: 400, password unchanged, token not spent', async (t) => {
  const user = await signUp(app)
  t.equal((await call(app, 'POST', '/api/auth/request-password-reset', { body: { email: user.email } })).statusCode, 200)
  const token = linkIn(await smtp.inbox.next(user.email)).searchParams.get('token')!
  const hashBefore = await passwordHashOf(user.id)

  const res = await call(app, 'POST', '/api/auth/reset-password', { body: { token, newPassword: 'Baseball1' } })
  t.equal(res.statusCode, 400)
  t.same(res.json(), COMPROMISED)
  t.equal(await passwordHashOf(user.id), hashBefore, 'the password is unchanged')
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: user.cookie })).statusCode, 200, 'the sessions stay')

  const done = await call(app, 'POST', '/api/auth/reset-password', { body: { token, newPassword: STRONG } })
  t.equal(done.statusCode, 200, 'the same token still works with a strong password')
  t.equal((await signIn(user.email, STRONG)).statusCode, 200)
})

t.test('change-password to a common password: 400, password unchanged, other sessions kept', async (t) => {
  const user = await signUp(app)
  const other = await signIn(user.email, user.password)
  const otherCookie = String(other.headers['set-cookie']).split(';', 1)[0]!
  const hashBefore = await passwordHashOf(user.id)

  const res = await call(app, 'POST', '/api/auth/change-password', {
    cookie: user.cookie,
    body: { currentPassword: user.password, newPassword: 'FOOTBALL1' },
  })
  t.equal(res.statusCode, 400)
  t.same(res.json(), COMPROMISED)
  t.equal(await passwordHashOf(user.id), hashBefore, 'the password is unchanged')
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: otherCookie })).statusCode, 200, 'no session ended')
  t.equal((await signIn(user.email, user.password)).statusCode, 200)

  const ok = await call(app, 'POST', '/api/auth/change-password', {
    cookie: user.cookie,
    body: { currentPassword: user.password, newPassword: STRONG },
  })
  t.equal(ok.statusCode, 200, 'a strong one is accepted')
  t.equal((await signIn(user.email, STRONG)).statusCode, 200)
})

t.test('signing in with a common password one already has still works (nothing new is chosen)', async (t) => {
  // An account whose password predates the rule (imported, or set before it): sign-in is not a new password.
  const user = await signUp(app)
  const legacy = await app.hasher.hash('password123', OFFLINE)
  await app.db.updateTable('account').set({ password_hash: legacy }).where('user_id', '=', user.id).execute()
  t.equal((await signIn(user.email, 'password123')).statusCode, 200)
})
