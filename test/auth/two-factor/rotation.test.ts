// AUTH_SECRET rotation: with the old key still listed after the new one, a two-factor secret and the
// backup codes made under the old key keep working; setups made after the rotation use the new key.
import t from 'tap'
import { buildTestApp, call, sessionCookieOf, signUp, TEST_SECRET } from '../../helpers/app.js'
import { codeAt, enableTotp } from '../../helpers/two-factor.js'

const NEW_SECRET = 'a-new-secret-that-is-long-enough-9876543210'
const before = await buildTestApp()
const after = await buildTestApp({ env: { AUTH_SECRET: `${NEW_SECRET},${TEST_SECRET}` } })
const onlyNew = await buildTestApp({ env: { AUTH_SECRET: NEW_SECRET } })

/** Signs in with the password on `app`; answers the challenge cookie. */
async function challenge(app: typeof before, email: string, password: string): Promise<string> {
  const res = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email, password } })
  const cookie = [res.headers['set-cookie']].flat().find((c) => c?.startsWith('better-auth.two_factor='))
  if (!res.json().twoFactorRedirect || !cookie) throw new Error(`no two-factor challenge: ${res.body}`)
  return cookie.split(';', 1)[0]!
}

t.test('a setup made under the old key still signs in after the rotation, by TOTP and by backup code', async (t) => {
  const user = await signUp(before)
  const now = new Date()
  const enabled = await enableTotp(before, user, now)
  const secret = enabled.secret
  t.equal(enabled.confirmed.statusCode, 200)

  const totp = await call(after, 'POST', '/api/auth/two-factor/verify-totp', {
    cookie: await challenge(after, user.email, user.password),
    body: { code: codeAt(secret, now, 1) },
  })
  t.equal(totp.statusCode, 200, totp.body)
  t.ok(sessionCookieOf(totp))
  const backup = await call(after, 'POST', '/api/auth/two-factor/verify-backup-code', {
    cookie: await challenge(after, user.email, user.password),
    body: { code: enabled.backupCodes[0] },
  })
  t.equal(backup.statusCode, 200, backup.body)

  // Under the new key alone, the old backup codes are unknown (as documented: keep the old key listed).
  const unknown = await call(onlyNew, 'POST', '/api/auth/two-factor/verify-backup-code', {
    cookie: await challenge(onlyNew, user.email, user.password),
    body: { code: enabled.backupCodes[1] },
  })
  t.same([unknown.statusCode, unknown.json().code], [401, 'INVALID_BACKUP_CODE'])
})

t.test('a setup made after the rotation uses the new key', async (t) => {
  const user = await signUp(after)
  const enabled = await enableTotp(after, user, new Date())
  t.equal(enabled.confirmed.statusCode, 200)
  const res = await call(onlyNew, 'POST', '/api/auth/two-factor/verify-backup-code', {
    cookie: await challenge(onlyNew, user.email, user.password),
    body: { code: enabled.backupCodes[0] },
  })
  t.equal(res.statusCode, 200, 'the old key is not needed for it')
})
