// An attacker's view of two-factor authentication, suspension and common passwords: each test is a
// way in that was tried against the real app and must stay shut.
import type { LightMyRequestResponse } from 'fastify'
import t from 'tap'
import { buildTestApp, call, proveAddress, signUp, signUpWithRole, type TestUser, uniqueEmail } from '../../helpers/app.js'
import { issueToken } from '../../../src/auth/links/verification.js'
import { auditEvents } from '../../helpers/expect.js'
import { createResult } from '../../helpers/gateways.js'
import { linkIn, startSmtpServer } from '../../helpers/smtp.js'
import { CHALLENGE, codeAt, secretOf, twoFactorApp } from '../../helpers/two-factor.js'

const smtp = await startSmtpServer()
const { app, clock } = await twoFactorApp({ REQUIRE_ADMIN_TWO_FACTOR: 'true', SMTP_URL: smtp.url })

/** The cookies a response set, as `name=value` pairs a browser sends back (cleared ones left out). */
function cookiesOf(res: LightMyRequestResponse): Map<string, string> {
  const jar = new Map<string, string>()
  for (const c of res.cookies as { name: string; value: string; maxAge?: number }[]) {
    if (c.value !== '' && c.maxAge !== 0) jar.set(c.name, c.value)
  }
  return jar
}

/** A member with two-factor on; returns the secret and backup codes. */
async function withTwoFactor(user?: TestUser) {
  const u = user ?? (await signUp(app))
  await proveAddress(app, u.id)
  const enabled = await call(app, 'POST', '/api/auth/two-factor/enable', { cookie: u.cookie, body: { password: u.password } })
  if (enabled.statusCode !== 200) throw new Error(enabled.body)
  const secret = secretOf(enabled.json().totpURI)
  const confirmed = await call(app, 'POST', '/api/auth/two-factor/verify-totp', {
    cookie: u.cookie,
    body: { code: codeAt(secret, clock.now()) },
  })
  if (confirmed.statusCode !== 200) throw new Error(confirmed.body)
  return { ...u, secret, backupCodes: enabled.json().backupCodes as string[] }
}

/** A sign-in that stops at the challenge: the `two_factor` cookie header. */
async function challenge(user: Pick<TestUser, 'email' | 'password'>, extraCookie?: string): Promise<string> {
  const res = await call(app, 'POST', '/api/auth/sign-in/email', {
    body: { email: user.email, password: user.password },
    cookie: extraCookie,
  })
  if (res.statusCode !== 200 || res.json().twoFactorRedirect !== true) throw new Error(`no challenge: ${res.body}`)
  const jar = cookiesOf(res)
  if (!jar.has(CHALLENGE)) throw new Error('no challenge cookie')
  return `${CHALLENGE}=${jar.get(CHALLENGE)}`
}

const verifyTotp = (cookie: string | undefined, body: unknown) =>
  call(app, 'POST', '/api/auth/two-factor/verify-totp', { cookie, body })

t.test('wrong codes raced over many challenges are still stopped at ten', async (t) => {
  const user = await withTwoFactor()
  clock.advance(60_000)
  const challenges = []
  for (let i = 0; i < 4; i++) challenges.push(await challenge(user))
  const wrong = (n: number) => String((Number(codeAt(user.secret, clock.now())) + 500_000 + n) % 1_000_000).padStart(6, '0')
  const results = await Promise.all(
    challenges.flatMap((cookie, i) => Array.from({ length: 5 }, (_, j) => verifyTotp(cookie, { code: wrong(i * 5 + j) }))),
  )
  const codes = results.map((r) => r.json().code as string)
  const checked = codes.filter((c) => c === 'INVALID_CODE').length
  t.same(new Set(codes), new Set(['INVALID_CODE', 'ACCOUNT_TEMPORARILY_LOCKED']), 'each a wrong code or the lock')
  t.ok(checked <= 10, `at most ten codes checked before the lock (checked ${checked}: ${codes.join(',')})`)
})

t.test("REQUIRE_ADMIN_TWO_FACTOR: an admin session without a second factor cannot read other users' records", async (t) => {
  const member = await signUp(app)
  const entry = await call(app, 'POST', '/api/v1/journal/entries', {
    cookie: member.cookie,
    body: { content: 'private thoughts', mood: 3 },
  })
  t.equal(entry.statusCode, 201)
  const resultId = await createResult(app, member)
  const records = [`/api/v1/journal/entries/${entry.json().id}`, `/api/v1/compatibility/results/${resultId}`]

  // A password alone (no second factor): the admin routes refuse it, and so do moderation reads.
  const admin = await signUpWithRole(app, 'admin')
  t.equal((await call(app, 'GET', '/api/v1/admin/users', { cookie: admin.cookie })).json().code, 'TWO_FACTOR_REQUIRED')
  for (const url of records) {
    const res = await call(app, 'GET', url, { cookie: admin.cookie })
    t.same([res.statusCode, res.json().code], [404, 'NOT_FOUND'], `${url}: read as a member`)
  }
  const reads = await auditEvents(app.db, { action: '%read_by_admin', actorId: admin.id })
  t.same(reads, [], 'no moderation read happened')

  // The same session once it passed a second factor reads them, audited.
  await withTwoFactor(admin)
  for (const url of records) t.equal((await call(app, 'GET', url, { cookie: admin.cookie })).statusCode, 200, url)
  // Their own records stay readable without one.
  const own = await call(app, 'POST', '/api/v1/journal/entries', { cookie: member.cookie, body: { content: 'mine', mood: 2 } })
  t.equal((await call(app, 'GET', `/api/v1/journal/entries/${own.json().id}`, { cookie: member.cookie })).statusCode, 200)
})

t.test('a common password padded with white space is still refused, on sign-up and on change', async (t) => {
  for (const password of ['password1 ', ' password1', '\tiloveyou\n', 'Sunshine1\u00a0', '\u3000qwertyuiop\u3000']) {
    const email = uniqueEmail('padded')
    const res = await call(app, 'POST', '/api/auth/sign-up/email', { body: { name: 'Padded', email, password } })
    t.same([res.statusCode, res.json().code], [400, 'PASSWORD_COMPROMISED'], JSON.stringify(password))
    t.equal(await app.db.selectFrom('user').select('id').where('email', '=', email).executeTakeFirst(), undefined)
  }
  const user = await signUp(app)
  const change = await call(app, 'POST', '/api/auth/change-password', {
    cookie: user.cookie,
    body: { currentPassword: user.password, newPassword: 'password123 ' },
  })
  t.same([change.statusCode, change.json().code], [400, 'PASSWORD_COMPROMISED'])
  // White space inside a passphrase is its own.
  const fine = await call(app, 'POST', '/api/auth/change-password', {
    cookie: user.cookie,
    body: { currentPassword: user.password, newPassword: 'pass word one two' },
  })
  t.equal(fine.statusCode, 200)
})

t.test('a sign-in waiting for its second factor ends when the password is reset or changed', async (t) => {
  // Whoever had the old password started a sign-in; the owner resets the password to shut them out.
  const user = await withTwoFactor()
  // A proven address: its second factor stays through the reset (an unproven one's goes, below).
  await app.db.updateTable('user').set({ email_verified: true }).where('id', '=', user.id).execute()
  const pending = await challenge(user)
  const token = await issueToken(app.db, 'reset-password', user.id, { expiresAt: new Date(clock.now().getTime() + 3_600_000) })
  const reset = await call(app, 'POST', '/api/auth/reset-password', { body: { token, newPassword: 'a brand new passphrase 42' } })
  t.equal(reset.statusCode, 200)
  clock.advance(30_000)
  const late = await verifyTotp(pending, { code: codeAt(user.secret, clock.now()) })
  t.same([late.statusCode, late.json().code], [401, 'INVALID_TWO_FACTOR_COOKIE'], 'the old sign-in is over')
  t.same(await app.db.selectFrom('session').select('id').where('user_id', '=', user.id).execute(), [])

  // The same with a change of password from a signed-in session.
  const other = await withTwoFactor()
  const started = await challenge(other)
  const changed = await call(app, 'POST', '/api/auth/change-password', {
    cookie: other.cookie,
    body: { currentPassword: other.password, newPassword: 'another new passphrase 43' },
  })
  t.equal(changed.statusCode, 200)
  clock.advance(30_000)
  const backup = await call(app, 'POST', '/api/auth/two-factor/verify-backup-code', {
    cookie: started,
    body: { code: other.backupCodes[0] },
  })
  t.same([backup.statusCode, backup.json().code], [401, 'INVALID_TWO_FACTOR_COOKIE'])
  // The owner's own new sign-in still works.
  const fresh = await challenge({ email: other.email, password: 'another new passphrase 43' })
  t.equal((await verifyTotp(fresh, { code: codeAt(other.secret, clock.now()) })).statusCode, 200)
})

t.test('whoever registers an address first sets up no second factor; the owner takes the account back', async (t) => {
  // Whoever registers an address first (never verified) cannot turn two-factor on: a second factor
  // of theirs would outlast the real owner's reset (src/auth/session/second-factor.ts).
  const squatter = await signUp(app)
  const enable = await call(app, 'POST', '/api/auth/two-factor/enable', {
    cookie: squatter.cookie,
    body: { password: squatter.password },
  })
  t.same([enable.statusCode, enable.json().code], [403, 'EMAIL_NOT_PROVEN'])
  const token = await issueToken(app.db, 'reset-password', squatter.id, {
    expiresAt: new Date(clock.now().getTime() + 3_600_000),
  })
  const newPassword = 'owner takes the address back 42'
  t.equal((await call(app, 'POST', '/api/auth/reset-password', { body: { token, newPassword } })).statusCode, 200)

  const signIn = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: squatter.email, password: newPassword } })
  t.equal(signIn.statusCode, 200)
  t.notOk(signIn.json().twoFactorRedirect, 'no second factor to ask for')
  t.equal(signIn.json().user.twoFactorEnabled, false)
  const [event] = await auditEvents(app.db, { action: 'auth.password_reset', targetId: squatter.id })
  t.match(event?.details, { takenBack: true })
})

t.test('disable racing a sign-in verify is never a 500 and leaves one consistent state', async (t) => {
  const outcomes = new Set<string>()
  for (let i = 0; i < 16; i++) {
    const user = await withTwoFactor()
    clock.advance(30_000)
    const pending = await challenge(user)
    const byBackupCode = i % 2 === 1
    const [verified, disabled] = await Promise.all([
      byBackupCode
        ? call(app, 'POST', '/api/auth/two-factor/verify-backup-code', { cookie: pending, body: { code: user.backupCodes[0] } })
        : verifyTotp(pending, { code: codeAt(user.secret, clock.now()) }),
      call(app, 'POST', '/api/auth/two-factor/disable', { cookie: user.cookie, body: { password: user.password } }),
    ])
    outcomes.add(`${verified.statusCode}/${disabled.statusCode}`)
    t.ok([200, 401].includes(verified.statusCode), `verify: ${verified.statusCode} ${verified.body.slice(0, 120)}`)
    t.equal(disabled.statusCode, 200, `disable: ${disabled.body.slice(0, 120)}`)
    const row = await app.db.selectFrom('two_factor').select('user_id').where('user_id', '=', user.id).executeTakeFirst()
    const { two_factor_enabled } = await app.db
      .selectFrom('user')
      .select('two_factor_enabled')
      .where('id', '=', user.id)
      .executeTakeFirstOrThrow()
    t.same([row, two_factor_enabled], [undefined, false], 'two-factor is off, row and flag')
  }
  t.comment([...outcomes].join(' '))
})

t.test('a password reset ends a change of address asked for by whoever held the account before', async (t) => {
  // Someone registers the victim's address first (nothing proves it) and asks to move the account
  // to their own address: an unverified account's link goes straight to the new address.
  const victimEmail = uniqueEmail('victim')
  const squatter = await signUp(app, { email: victimEmail, password: 'the squatter passphrase 1' })
  const attackerEmail = uniqueEmail('attacker')
  const asked = await call(app, 'POST', '/api/auth/change-email', { cookie: squatter.cookie, body: { newEmail: attackerEmail } })
  t.equal(asked.statusCode, 200)
  const pendingChange = linkIn(await smtp.inbox.next(attackerEmail))

  // The owner of the address takes the account over with a reset from their mailbox.
  t.equal((await call(app, 'POST', '/api/auth/request-password-reset', { body: { email: victimEmail } })).statusCode, 200)
  const token = linkIn(await smtp.inbox.next(victimEmail)).searchParams.get('token')!
  const reset = await call(app, 'POST', '/api/auth/reset-password', { body: { token, newPassword: 'the owner passphrase 2' } })
  t.equal(reset.statusCode, 200)

  // The squatter's link no longer moves the account to their address.
  const used = await call(app, 'GET', `${pendingChange.pathname}${pendingChange.search}`)
  t.equal(used.statusCode, 302)
  t.equal(new URL(String(used.headers.location)).searchParams.get('error'), 'invalid_token', 'the link is dead')
  const { email } = await app.db.selectFrom('user').select('email').where('id', '=', squatter.id).executeTakeFirstOrThrow()
  t.equal(email, victimEmail, 'the account keeps the address whose owner reset it')
})

t.test('a two-factor setup whose password check ran across a password reset writes nothing', async (t) => {
  // Whoever held the session starts a setup while the owner resets the password from the mailbox;
  // one hash at a time, so the reset (which ends that session) commits while the check is hashing.
  const serial = await buildTestApp({ env: { SMTP_URL: smtp.url, HASH_MAX_CONCURRENCY: '1' } })
  const holder = await signUp(serial)
  await proveAddress(serial, holder.id)
  await call(serial, 'POST', '/api/auth/request-password-reset', { body: { email: holder.email } })
  const token = linkIn(await smtp.inbox.next(holder.email)).searchParams.get('token')!
  const [enable, reset] = await Promise.all([
    call(serial, 'POST', '/api/auth/two-factor/enable', { cookie: holder.cookie, body: { password: holder.password } }),
    call(serial, 'POST', '/api/auth/reset-password', { body: { token, newPassword: 'the owner chose this one' } }),
  ])
  t.equal(reset.statusCode, 200)
  // Which hash the one worker takes first is not fixed: before the reset the setup is made and then
  // removed by it; after, the session it came with has ended.
  t.ok([200, 401].includes(enable.statusCode), `enable answered ${enable.statusCode}`)
  const setups = await serial.db.selectFrom('two_factor').select('user_id').where('user_id', '=', holder.id).execute()
  t.same(setups, [], 'no secret the owner never saw')
})
