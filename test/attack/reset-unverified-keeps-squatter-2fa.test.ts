// Pre-account takeover, the password-reset way in. Whoever registers an address first (never
// verified) can turn two-factor on with an authenticator only they hold. When the real owner takes
// the account back with a password reset, resetPassword (src/auth/email/service.ts) removes the
// identity-provider links of an unverified account ("perhaps made by whoever registered it first")
// but keeps the squatter's TOTP secret, backup codes and trusted devices: the owner's next sign-in
// asks for the squatter's code, so the owner is locked out of their own address for good. The
// identity-provider claim of such an account removes two-factor for exactly this reason
// (docs/architecture.md, "Account takeover guard"); the reset must too.
import t from 'tap'
import { issueToken } from '../../src/auth/verification.js'
import { buildTestApp, call, signUp } from '../helpers/app.js'
import { enableTotp } from '../helpers/two-factor.js'

t.test("a reset of a never-verified account does not leave the first holder's two-factor in place", async (t) => {
  const app = await buildTestApp()
  // The squatter registers the victim's address and turns two-factor on.
  const squatter = await signUp(app, { email: `victim-${Date.now()}@example.com` })
  const { confirmed } = await enableTotp(app, squatter, app.clock.now())
  t.equal(confirmed.statusCode, 200, 'two-factor is on, with the squatter\'s authenticator')

  // The real owner receives the reset mail at their address and sets a new password.
  const token = await issueToken(app.db, 'reset-password', squatter.id, { expiresAt: new Date(Date.now() + 3_600_000) })
  const reset = await call(app, 'POST', '/api/auth/reset-password', {
    body: { token, newPassword: 'owner takes the address back 42' },
  })
  t.equal(reset.statusCode, 200)

  const signIn = await call(app, 'POST', '/api/auth/sign-in/email', {
    body: { email: squatter.email, password: 'owner takes the address back 42' },
  })
  t.equal(signIn.statusCode, 200)
  t.notOk(signIn.json().twoFactorRedirect, "the owner is not asked for the squatter's TOTP code")
  const row = await app.db.selectFrom('two_factor').select('user_id').where('user_id', '=', squatter.id).executeTakeFirst()
  t.equal(row, undefined, "the squatter's two-factor secret is gone")
})
