// Two-factor authentication driven by better-auth's own client (twoFactorClient) over a real socket
// with a cookie jar, as the web app does: enable and confirm, the sign-in that stops for the second
// factor, TOTP and backup codes, replays, the attempt limits, the cookies, trusted devices, disable.
import t from 'tap'
import { call, proveAddress, signUp, uniqueEmail } from '../../helpers/app.js'
import {
  browser,
  CHALLENGE,
  codeAt,
  PASSWORD,
  SESSION,
  secretOf,
  sessionRows,
  TRUST,
  twoFactorApp,
  type TestBrowser,
  verificationIds,
} from '../../helpers/two-factor.js'

const { app, clock, baseURL } = await twoFactorApp()

/** A new member signed in on a new browser. */
async function member() {
  const b = browser(baseURL)
  const email = uniqueEmail('tf')
  const res = await b.client.signUp.email({ name: 'Two Factor', email, password: PASSWORD })
  if (res.error) throw new Error(JSON.stringify(res.error))
  await proveAddress(app, res.data!.user.id)
  return { b, email, id: res.data!.user.id }
}

/** A member with two-factor on (enabled and confirmed); the code used to confirm is spent. */
async function memberWithTwoFactor() {
  const m = await member()
  const enabled = await m.b.client.twoFactor.enable({ password: PASSWORD })
  if (enabled.error) throw new Error(JSON.stringify(enabled.error))
  const secret = secretOf(enabled.data!.totpURI)
  const confirmed = await m.b.client.twoFactor.verifyTotp({ code: codeAt(secret, clock.now()) })
  if (confirmed.error) throw new Error(JSON.stringify(confirmed.error))
  return { ...m, secret, backupCodes: enabled.data!.backupCodes }
}

/** Signs out and in again with the password: two-factor on, the sign-in stops at the challenge. */
async function signInAgain(b: TestBrowser, email: string) {
  await b.client.signOut()
  return b.client.signIn.email({ email, password: PASSWORD })
}

/** A fresh code: the clock moves one time step, so the previous code is not replayed. */
function nextCode(secret: string): string {
  clock.advance(30_000)
  return codeAt(secret, clock.now())
}

t.test('enable needs a session and the right password, and stays off until a code confirms it', async (t) => {
  const anonymous = browser(baseURL)
  const noSession = await anonymous.client.twoFactor.enable({ password: PASSWORD })
  t.same([noSession.error?.status, noSession.error?.code], [401, 'UNAUTHORIZED'])

  const { b, id } = await member()
  const wrong = await b.client.twoFactor.enable({ password: 'not the password' })
  t.same([wrong.error?.status, wrong.error?.code], [400, 'INVALID_PASSWORD'])
  t.equal(await app.db.selectFrom('two_factor').select('user_id').where('user_id', '=', id).executeTakeFirst(), undefined)

  const enabled = await b.client.twoFactor.enable({ password: PASSWORD, issuer: 'Insight Test' })
  t.equal(enabled.error, null)
  const { totpURI, backupCodes } = enabled.data!
  t.match(totpURI, /^otpauth:\/\/totp\/Insight%20Test:/)
  t.match(totpURI, /algorithm=SHA1/)
  t.match(totpURI, /digits=6/)
  t.match(totpURI, /period=30/)
  t.equal(backupCodes.length, 10)
  for (const code of backupCodes) t.match(code, /^[A-Za-z0-9]{5}-[A-Za-z0-9]{5}$/)
  t.equal(new Set(backupCodes).size, 10, 'ten different codes')
  t.equal((await b.client.getSession()).data?.user.twoFactorEnabled, false, 'not on before a code confirms it')

  // At rest: the secret encrypted, the backup codes only as hashes.
  const secret = secretOf(totpURI)
  const row = await app.db.selectFrom('two_factor').selectAll().where('user_id', '=', id).executeTakeFirstOrThrow()
  t.not(row.secret, secret)
  t.notMatch(row.secret, secret)
  t.notMatch(Buffer.from(row.secret.slice(3), 'base64url').toString('latin1'), secret)
  t.equal(row.verified, false)
  const stored = await app.db.selectFrom('two_factor_backup_code').select('code_hash').where('user_id', '=', id).execute()
  t.equal(stored.length, 10)
  for (const { code_hash } of stored) {
    t.notOk(backupCodes.includes(code_hash))
    t.notOk(backupCodes.some((c) => code_hash.includes(c.replace('-', ''))))
  }

  const bad = await b.client.twoFactor.verifyTotp({ code: '000000' === codeAt(secret, clock.now()) ? '111111' : '000000' })
  t.same([bad.error?.status, bad.error?.code], [401, 'INVALID_CODE'])
  const code = codeAt(secret, clock.now())
  const confirmed = await b.client.twoFactor.verifyTotp({ code })
  t.equal(confirmed.error, null, JSON.stringify(confirmed.error))
  t.equal(confirmed.data?.user.twoFactorEnabled, true)
  t.equal((await b.client.getSession()).data?.user.twoFactorEnabled, true)
  t.same(
    (await sessionRows(app, id)).map((s) => s.two_factor_verified),
    [true],
    'the session that confirmed counts as having passed a second factor',
  )
  const replay = await b.client.twoFactor.verifyTotp({ code })
  t.same([replay.error?.status, replay.error?.code], [401, 'INVALID_CODE'], 'the confirming code does not work twice')

  const again = await b.client.twoFactor.enable({ password: PASSWORD })
  t.same([again.error?.status, again.error?.code], [400, 'TWO_FACTOR_ALREADY_ENABLED'], 'a working setup is not replaced')
})

t.test('five wrong codes on the confirm step, then even the right one is refused until enable starts again', async (t) => {
  const { b } = await member()
  const secret = secretOf((await b.client.twoFactor.enable({ password: PASSWORD })).data!.totpURI)
  const right = codeAt(secret, clock.now())
  const wrongCode = right === '123456' ? '654321' : '123456'
  for (let i = 0; i < 5; i++) {
    const res = await b.client.twoFactor.verifyTotp({ code: wrongCode })
    t.equal(res.error?.code, 'INVALID_CODE', `wrong code ${i + 1}`)
  }
  const locked = await b.client.twoFactor.verifyTotp({ code: right })
  t.same([locked.error?.status, locked.error?.code], [400, 'TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE'])
  t.equal((await b.client.getSession()).data?.user.twoFactorEnabled, false)

  const fresh = secretOf((await b.client.twoFactor.enable({ password: PASSWORD })).data!.totpURI)
  t.not(fresh, secret, 'a new secret')
  const ok = await b.client.twoFactor.verifyTotp({ code: codeAt(fresh, clock.now()) })
  t.equal(ok.error, null)
  t.equal(ok.data?.user.twoFactorEnabled, true)
})

t.test('a correct sign-in stops with no session; verify-totp starts it; the code works once', async (t) => {
  const { b, email, id, secret } = await memberWithTwoFactor()
  const before = b.setCookies.length
  const stopped = await signInAgain(b, email)
  t.equal(stopped.error, null)
  t.same(stopped.data, { twoFactorRedirect: true, twoFactorMethods: ['totp'] })
  t.notOk(b.jar.has(SESSION), 'no session cookie')
  t.same(await sessionRows(app, id), [], 'no session row')
  t.equal((await b.client.getSession()).data, null)
  const challengeCookie = b.setCookies.slice(before).find((c) => c.startsWith(`${CHALLENGE}=`) && !c.startsWith(`${CHALLENGE}=;`))
  t.ok(challengeCookie)
  t.match(challengeCookie, /HttpOnly/i)
  t.match(challengeCookie, /Max-Age=600/)
  t.match(challengeCookie, /SameSite=Lax/i)

  const code = nextCode(secret)
  const verified = await b.client.twoFactor.verifyTotp({ code })
  t.equal(verified.error, null, JSON.stringify(verified.error))
  t.equal(verified.data?.user.id, id)
  t.ok(b.jar.has(SESSION), 'the session cookie is set')
  t.notOk(b.jar.has(CHALLENGE), 'the challenge cookie is spent')
  t.equal((await b.client.getSession()).data?.user.id, id)
  t.same(
    (await sessionRows(app, id)).map((s) => s.two_factor_verified),
    [true],
  )

  // The same code on a new challenge (same time step): refused, it was accepted once.
  t.same((await signInAgain(b, email)).data, { twoFactorRedirect: true, twoFactorMethods: ['totp'] })
  const replay = await b.client.twoFactor.verifyTotp({ code })
  t.same([replay.error?.status, replay.error?.code], [401, 'INVALID_CODE'])
  t.notOk(b.jar.has(SESSION))
  // An earlier step's code, still inside the drift window, is refused too.
  const earlier = await b.client.twoFactor.verifyTotp({ code: codeAt(secret, clock.now(), -1) })
  t.equal(earlier.error?.code, 'INVALID_CODE')
  // The next step's code (one step of drift ahead) passes.
  const ahead = await b.client.twoFactor.verifyTotp({ code: codeAt(secret, clock.now(), 1) })
  t.equal(ahead.error, null)
})

t.test('five wrong codes on one challenge: TOO_MANY_ATTEMPTS, the challenge is gone, no session', async (t) => {
  const { b, email, id, secret } = await memberWithTwoFactor()
  await signInAgain(b, email)
  clock.advance(30_000)
  const right = codeAt(secret, clock.now())
  const wrongCode = right === '123456' ? '654321' : '123456'
  for (let i = 0; i < 5; i++) {
    const res = await b.client.twoFactor.verifyTotp({ code: wrongCode })
    t.same([res.error?.status, res.error?.code], [401, 'INVALID_CODE'], `wrong code ${i + 1}`)
  }
  const sixth = await b.client.twoFactor.verifyTotp({ code: right })
  t.same([sixth.error?.status, sixth.error?.code], [400, 'TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE'])
  t.notOk(b.jar.has(CHALLENGE), 'the challenge cookie is cleared')
  t.same(await sessionRows(app, id), [])
  t.same(await verificationIds(app, id, 'two-factor-challenge'), [], 'the challenge row is gone')
  // Backup codes count against the same challenge's tries.
  await b.client.signIn.email({ email, password: PASSWORD })
  for (let i = 0; i < 5; i++) await b.client.twoFactor.verifyBackupCode({ code: 'AAAAA-AAAAA' })
  const locked = await b.client.twoFactor.verifyTotp({ code: right })
  t.equal(locked.error?.code, 'TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE')
  // Ten wrong codes in a row across challenges lock sign-in with the second factor for 15 minutes.
  await b.client.signIn.email({ email, password: PASSWORD })
  const lockedOut = await b.post('/api/auth/two-factor/verify-totp', { code: right })
  t.equal(lockedOut.status, 429)
  t.equal(((await lockedOut.json()) as { code: string }).code, 'ACCOUNT_TEMPORARILY_LOCKED')
  t.ok(Number(lockedOut.headers.get('retry-after')) > 800, 'Retry-After says how long')
  t.same(await sessionRows(app, id), [])
  clock.advance(15 * 60_000)
  await b.client.signIn.email({ email, password: PASSWORD })
  t.equal(
    (await b.client.twoFactor.verifyTotp({ code: codeAt(secret, clock.now()) })).error,
    null,
    'a new challenge after the lock',
  )
})

t.test('a right code resets the count of wrong codes in a row at sign-in', async (t) => {
  const { b, email, secret } = await memberWithTwoFactor()
  for (const round of [1, 2]) {
    await signInAgain(b, email)
    const right = nextCode(secret)
    for (let i = 0; i < 4; i++) await b.client.twoFactor.verifyTotp({ code: right === '123456' ? '654321' : '123456' })
    t.equal(
      (await b.client.twoFactor.verifyTotp({ code: right })).error,
      null,
      `round ${round}: 8 wrong codes over two rounds, no lock`,
    )
  }
  await signInAgain(b, email)
  const wrong = await b.client.twoFactor.verifyTotp({ code: '12345' })
  t.equal(wrong.error?.code, 'INVALID_CODE')
})

t.test("an absent, tampered, expired or another browser's spent challenge cookie is INVALID_TWO_FACTOR_COOKIE", async (t) => {
  const { b, email, id, secret } = await memberWithTwoFactor()
  const absent = await browser(baseURL).client.twoFactor.verifyTotp({ code: nextCode(secret) })
  t.same([absent.error?.status, absent.error?.code], [401, 'INVALID_TWO_FACTOR_COOKIE'])

  await signInAgain(b, email)
  const genuine = b.jar.get(CHALLENGE)!
  const [token, signature] = [genuine.slice(0, genuine.lastIndexOf('.')), genuine.slice(genuine.lastIndexOf('.') + 1)]
  const forged = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}.${signature}`
  b.jar.set(CHALLENGE, forged)
  const tampered = await b.client.twoFactor.verifyTotp({ code: codeAt(secret, clock.now()) })
  t.same([tampered.error?.status, tampered.error?.code], [401, 'INVALID_TWO_FACTOR_COOKIE'])
  b.jar.set(CHALLENGE, 'not-signed-at-all')
  t.equal((await b.client.twoFactor.verifyTotp({ code: codeAt(secret, clock.now()) })).error?.code, 'INVALID_TWO_FACTOR_COOKIE')
  t.same(await sessionRows(app, id), [])

  // The genuine cookie still works; once used, a copy of it (another tab) is worthless.
  b.jar.set(CHALLENGE, genuine)
  t.equal((await b.client.twoFactor.verifyTotp({ code: codeAt(secret, clock.now()) })).error, null)
  const copy = browser(baseURL)
  copy.jar.set(CHALLENGE, genuine)
  t.equal((await copy.client.twoFactor.verifyTotp({ code: nextCode(secret) })).error?.code, 'INVALID_TWO_FACTOR_COOKIE')

  await signInAgain(b, email)
  clock.advance(10 * 60_000 + 1000)
  const expired = await b.client.twoFactor.verifyTotp({ code: codeAt(secret, clock.now()) })
  t.same([expired.error?.status, expired.error?.code], [401, 'INVALID_TWO_FACTOR_COOKIE'], 'ten minutes at most')
  t.same(await sessionRows(app, id), [])
})

t.test('a backup code signs in once and only once', async (t) => {
  const { b, email, id, backupCodes } = await memberWithTwoFactor()
  await signInAgain(b, email)
  const used = await b.client.twoFactor.verifyBackupCode({ code: backupCodes[0]! })
  t.equal(used.error, null, JSON.stringify(used.error))
  t.equal(used.data?.user.id, id)
  t.ok(b.jar.has(SESSION))
  t.same(
    (await sessionRows(app, id)).map((s) => s.two_factor_verified),
    [true],
  )

  await signInAgain(b, email)
  const again = await b.client.twoFactor.verifyBackupCode({ code: backupCodes[0]! })
  t.same([again.error?.status, again.error?.code], [401, 'INVALID_BACKUP_CODE'])
  t.notOk(b.jar.has(SESSION))
  const other = await b.client.twoFactor.verifyBackupCode({ code: backupCodes[1]! })
  t.equal(other.error, null)
  t.equal((await app.db.selectFrom('two_factor_backup_code').select('code_hash').where('user_id', '=', id).execute()).length, 8)
})

t.test('generate-backup-codes needs the password and makes the old codes stop working', async (t) => {
  const { b, email, backupCodes } = await memberWithTwoFactor()
  const wrong = await b.client.twoFactor.generateBackupCodes({ password: 'not the password' })
  t.same([wrong.error?.status, wrong.error?.code], [400, 'INVALID_PASSWORD'])
  const fresh = await b.client.twoFactor.generateBackupCodes({ password: PASSWORD })
  t.equal(fresh.error, null)
  t.equal(fresh.data?.status, true)
  t.equal(fresh.data?.backupCodes.length, 10)
  t.notOk(fresh.data!.backupCodes.some((c) => backupCodes.includes(c)))

  await signInAgain(b, email)
  t.equal((await b.client.twoFactor.verifyBackupCode({ code: backupCodes[2]! })).error?.code, 'INVALID_BACKUP_CODE')
  t.equal((await b.client.twoFactor.verifyBackupCode({ code: fresh.data!.backupCodes[0]! })).error, null)

  const { b: off } = await member()
  const notOn = await off.client.twoFactor.generateBackupCodes({ password: PASSWORD })
  t.same([notOn.error?.status, notOn.error?.code], [400, 'TWO_FACTOR_NOT_ENABLED'])
})

t.test('get-totp-uri answers the same secret for the right password only', async (t) => {
  const { b, secret } = await memberWithTwoFactor()
  const wrong = await b.client.twoFactor.getTotpUri({ password: 'not the password' })
  t.same([wrong.error?.status, wrong.error?.code], [400, 'INVALID_PASSWORD'])
  const uri = await b.client.twoFactor.getTotpUri({ password: PASSWORD })
  t.equal(uri.error, null)
  t.equal(secretOf(uri.data!.totpURI), secret)
  const none = await (await member()).b.client.twoFactor.getTotpUri({ password: PASSWORD })
  t.same([none.error?.status, none.error?.code], [400, 'TOTP_NOT_ENABLED'])
})

t.test('a trusted device skips the second factor for its user only, and not after disable', async (t) => {
  const alice = await memberWithTwoFactor()
  await signInAgain(alice.b, alice.email)
  const trusted = await alice.b.client.twoFactor.verifyTotp({ code: nextCode(alice.secret), trustDevice: true })
  t.equal(trusted.error, null)
  const trustCookie = alice.b.setCookies.filter((c) => c.startsWith(`${TRUST}=`)).at(-1)!
  t.ok(alice.b.jar.has(TRUST), 'the trust cookie is set')
  t.match(trustCookie, /HttpOnly/i)
  t.match(trustCookie, /Max-Age=2592000/)

  const skipped = await signInAgain(alice.b, alice.email)
  t.equal(skipped.error, null)
  t.equal((skipped.data as { user?: { id: string } }).user?.id, alice.id, 'signed in without a code')
  t.ok(alice.b.jar.has(SESSION))
  t.same(
    (await sessionRows(app, alice.id)).map((s) => s.two_factor_verified),
    [true],
    'a trusted device counts as a passed second factor',
  )

  // Bob, on Alice's browser with Alice's trust cookie, is asked for his code.
  const bob = await memberWithTwoFactor()
  await alice.b.client.signOut()
  const savedTrust = alice.b.jar.get(TRUST)!
  const bobSessions = (await sessionRows(app, bob.id)).length
  const asBob = await alice.b.client.signIn.email({ email: bob.email, password: PASSWORD })
  t.same(asBob.data, { twoFactorRedirect: true, twoFactorMethods: ['totp'] })
  t.notOk(alice.b.jar.has(SESSION))
  t.equal((await sessionRows(app, bob.id)).length, bobSessions, 'no session for Bob')

  // Disable forgets every trusted device: the old cookie no longer skips after two-factor is on again.
  const a2 = browser(baseURL)
  await a2.client.signIn.email({ email: alice.email, password: PASSWORD })
  await a2.client.twoFactor.verifyTotp({ code: nextCode(alice.secret) })
  const wrongPassword = await a2.client.twoFactor.disable({ password: 'not the password' })
  t.same([wrongPassword.error?.status, wrongPassword.error?.code], [400, 'INVALID_PASSWORD'])
  const disabled = await a2.client.twoFactor.disable({ password: PASSWORD })
  t.equal(disabled.error, null)
  t.same(disabled.data, { status: true })
  t.same(
    await verificationIds(app, alice.id, 'two-factor-trusted-device'),
    [],
    'every trusted device of the account is forgotten',
  )
  // Its TOTP gone, that session's second factor proves nothing: it proves the address to set one up again.
  await proveAddress(app, alice.id)
  const secret = secretOf((await a2.client.twoFactor.enable({ password: PASSWORD })).data!.totpURI)
  t.equal((await a2.client.twoFactor.verifyTotp({ code: codeAt(secret, clock.now()) })).error, null)
  const b3 = browser(baseURL)
  b3.jar.set(TRUST, savedTrust)
  const afterDisable = await b3.client.signIn.email({ email: alice.email, password: PASSWORD })
  t.same(afterDisable.data, { twoFactorRedirect: true, twoFactorMethods: ['totp'] })
  t.notOk(b3.jar.has(TRUST), 'the dead trust cookie is cleared')
})

t.test('disable turns two-factor off: the next sign-in needs no code', async (t) => {
  const { b, email, id } = await memberWithTwoFactor()
  const res = await b.client.twoFactor.disable({ password: PASSWORD })
  t.equal(res.error, null)
  t.equal((await b.client.getSession()).data?.user.twoFactorEnabled, false)
  t.same(
    (await sessionRows(app, id)).map((s) => s.two_factor_verified),
    [false],
    'no session counts as having passed a second factor any more',
  )
  t.equal(await app.db.selectFrom('two_factor').select('user_id').where('user_id', '=', id).executeTakeFirst(), undefined)
  const signedIn = await signInAgain(b, email)
  t.equal((signedIn.data as { user?: { id: string } }).user?.id, id)
  t.ok(b.jar.has(SESSION))
})

t.test('passwords on the two-factor routes are limited per account, right answers included', async (t) => {
  const { b } = await memberWithTwoFactor()
  // The setup's enable was the first attempt of the minute (a right answer counts too).
  for (let i = 0; i < 4; i++) {
    const res = await b.client.twoFactor.disable({ password: `wrong ${i}` })
    t.equal(res.error?.code, 'INVALID_PASSWORD')
  }
  const limited = await b.client.twoFactor.getTotpUri({ password: PASSWORD })
  t.same([limited.error?.status, limited.error?.code], [429, 'RATE_LIMITED'], 'even the right password, for now')
  t.equal((await b.client.getSession()).data?.user.twoFactorEnabled, true)
})

t.test('bad, oversized and unknown input is a 400 in the one error shape, never a 5xx', async (t) => {
  const { b } = await memberWithTwoFactor()
  const cases: Array<[string, unknown]> = [
    ['/api/auth/two-factor/verify-totp', { code: '1'.repeat(100) }],
    ['/api/auth/two-factor/verify-totp', { code: '' }],
    ['/api/auth/two-factor/verify-totp', { code: 123456 }],
    ['/api/auth/two-factor/verify-totp', { code: '123456', userId: 'someone' }],
    ['/api/auth/two-factor/verify-totp', { code: '123456', trustDevice: 'yes' }],
    ['/api/auth/two-factor/verify-backup-code', { code: 'x'.repeat(10_000) }],
    ['/api/auth/two-factor/verify-backup-code', { code: 'AAAAA-AAAAA', disableSession: true }],
    ['/api/auth/two-factor/enable', { password: PASSWORD, twoFactorEnabled: true }],
    ['/api/auth/two-factor/enable', { password: PASSWORD, issuer: 'i'.repeat(500) }],
    ['/api/auth/two-factor/enable', '{"password":"correct horse battery staple","issuer":"\\ud800"}'],
    ['/api/auth/two-factor/enable', { password: PASSWORD, issuer: 'a\u0000b' }],
    ['/api/auth/two-factor/enable', { password: 'p'.repeat(5000) }],
    ['/api/auth/two-factor/disable', {}],
    ['/api/auth/two-factor/get-totp-uri', { password: null }],
    ['/api/auth/two-factor/generate-backup-codes', '{"password":'],
  ]
  for (const [path, body] of cases) {
    const res = await b.post(path, body)
    const json = (await res.json()) as { code: string; status: number; message: string }
    t.equal(res.status, 400, `${path} ${JSON.stringify(body).slice(0, 60)}`)
    t.equal(json.status, 400)
    t.type(json.message, 'string')
    t.match(json.code, /^(VALIDATION_ERROR|BAD_REQUEST)$/)
  }
  // An issuer that cannot go into a URI, for an account that could enable: still a 400.
  const fresh = await member()
  const surrogate = await fresh.b.post('/api/auth/two-factor/enable', `{"password":"${PASSWORD}","issuer":"\\ud800"}`)
  t.same([surrogate.status, ((await surrogate.json()) as { code: string }).code], [400, 'VALIDATION_ERROR'])
  t.equal(await app.db.selectFrom('two_factor').select('user_id').where('user_id', '=', fresh.id).executeTakeFirst(), undefined)
  // Codes of the right length but not digits are just wrong codes.
  t.equal((await b.client.twoFactor.verifyTotp({ code: 'abcdef' })).error?.code, 'INVALID_CODE')
  t.equal((await b.client.getSession()).data?.user.twoFactorEnabled, true, 'nothing changed')
})

t.test('without a browser: the same answers through inject (no Origin, no cookie)', async (t) => {
  const user = await signUp(app)
  await proveAddress(app, user.id)
  const res = await call(app, 'POST', '/api/auth/two-factor/enable', { cookie: user.cookie, body: { password: user.password } })
  t.equal(res.statusCode, 200)
  const anonymous = await call(app, 'POST', '/api/auth/two-factor/verify-totp', { body: { code: '123456' } })
  t.same([anonymous.statusCode, anonymous.json().code], [401, 'INVALID_TWO_FACTOR_COOKIE'])
})

t.test('the same code on two challenges at once: exactly one sign-in passes', async (t) => {
  const { email, id, secret, backupCodes } = await memberWithTwoFactor()
  const [one, two] = [browser(baseURL), browser(baseURL)]
  for (const b of [one, two])
    t.same((await b.client.signIn.email({ email, password: PASSWORD })).data, {
      twoFactorRedirect: true,
      twoFactorMethods: ['totp'],
    })
  const code = nextCode(secret)
  const totp = await Promise.all([one, two].map((b) => b.client.twoFactor.verifyTotp({ code })))
  t.same(totp.map((r) => r.error?.code ?? 'ok').sort(), ['INVALID_CODE', 'ok'], 'a TOTP code')

  const [three, four] = [browser(baseURL), browser(baseURL)]
  for (const b of [three, four]) await b.client.signIn.email({ email, password: PASSWORD })
  const backup = await Promise.all([three, four].map((b) => b.client.twoFactor.verifyBackupCode({ code: backupCodes[3]! })))
  t.same(backup.map((r) => r.error?.code ?? 'ok').sort(), ['INVALID_BACKUP_CODE', 'ok'], 'a backup code')
  t.equal((await sessionRows(app, id)).length, 3, 'the first session, and one per code')
})

t.test('a challenge begun before two-factor was turned off is worthless', async (t) => {
  const { b, email, secret } = await memberWithTwoFactor()
  const pending = browser(baseURL)
  await pending.client.signIn.email({ email, password: PASSWORD })
  t.equal((await b.client.twoFactor.disable({ password: PASSWORD })).error, null)
  const res = await pending.client.twoFactor.verifyTotp({ code: nextCode(secret) })
  t.same([res.error?.status, res.error?.code], [401, 'INVALID_TWO_FACTOR_COOKIE'])
  t.notOk(pending.jar.has(SESSION))
})
