// The operation ids in the OpenAPI document are the names the web client's generated calls use:
// renaming one breaks the client, so every route's id is pinned here, in one table.
import t from 'tap'
import { buildTestApp } from '../helpers/app.js'

const app = await buildTestApp()

const OPERATION_IDS: Record<string, string> = {
  'POST /api/auth/sign-in/email': 'signInEmail',
  'GET /api/v1/whoami': 'whoami',
  'GET /api/auth/sign-in/idp': 'signInIdp',
  'POST /api/auth/sign-in/social': 'signInSocial',
  'GET /api/auth/callback/idp': 'callbackIdp',
  'POST /api/v1/journal/entries': 'createEntry',
  'GET /api/v1/journal/entries': 'listEntries',
  'GET /api/v1/journal/entries/{id}': 'getEntry',
  'PATCH /api/v1/journal/entries/{id}': 'updateEntry',
  'DELETE /api/v1/journal/entries/{id}': 'deleteEntry',
  'GET /api/v1/journal/prompt/today': 'getTodayPrompt',
  'POST /api/v1/compatibility/results': 'createResult',
  'GET /api/v1/compatibility/results': 'listResults',
  'GET /api/v1/compatibility/results/{id}': 'getResult',
  'POST /api/v1/compatibility/results/{id}/unlock': 'unlockDeepInsights',
  'PUT /api/v1/compatibility/results/{id}/deep-insights': 'saveDeepInsights',
  'POST /api/v1/payments/checkout': 'createCheckout',
  'POST /api/v1/payments/{paymentId}/verify': 'verifyPayment',
  'POST /api/v1/payments/webhook/{provider}': 'processWebhook',
  'GET /api/v1/payments': 'listPayments',
  'POST /api/v1/consent': 'recordConsent',
  'GET /api/v1/consent': 'getConsents',
  'GET /api/v1/me/export': 'exportMyData',
  'GET /api/v1/me/security-events': 'listSecurityEvents',
  'DELETE /api/v1/me': 'deleteMyAccount',
  'GET /api/v1/admin/users': 'listUsers',
  'GET /api/v1/admin/users/{id}': 'getUser',
  'POST /api/v1/admin/users/{id}/make-admin': 'makeUserAdmin',
  'POST /api/v1/admin/users/{id}/role': 'setUserRole',
  'POST /api/v1/admin/users/{id}/premium-plus': 'setUserPremiumPlus',
  'POST /api/v1/admin/users/{id}/plan': 'setUserPlan',
  'GET /api/v1/admin/analytics/usage': 'getUsageAnalytics',
  // better-auth's admin plugin's routes: its own ids where no admin procedure has them already.
  'GET /api/auth/admin/list-users': 'adminListUsers',
  'GET /api/auth/admin/get-user': 'adminGetUser',
  'POST /api/auth/admin/set-role': 'adminSetRole',
  'POST /api/auth/admin/ban-user': 'adminBanUser',
  'POST /api/auth/admin/unban-user': 'adminUnbanUser',
  'POST /api/auth/admin/list-user-sessions': 'adminListUserSessions',
  'POST /api/auth/admin/revoke-user-session': 'adminRevokeUserSession',
  'POST /api/auth/admin/revoke-user-sessions': 'adminRevokeUserSessions',
  'POST /api/auth/admin/remove-user': 'adminRemoveUser',
  'POST /api/auth/admin/impersonate-user': 'adminImpersonateUser',
  'POST /api/auth/admin/stop-impersonating': 'adminStopImpersonating',
  'GET /api/v1/admin/audit': 'listAuditEvents',
  'POST /api/auth/revoke-sessions': 'revokeSessions',
  'GET /api/auth/reset-password/{token}': 'resetPasswordCallback',
  'POST /api/auth/link-social': 'linkSocialAccount',
  'POST /api/auth/update-user': 'updateUser',
  'POST /api/auth/change-email': 'changeEmail',
  'POST /api/auth/delete-user': 'deleteUser',
  'GET /api/auth/delete-user/callback': 'deleteUserCallback',
  'GET /api/auth/list-accounts': 'listUserAccounts',
  'POST /api/auth/unlink-account': 'unlinkAccount',
  'GET /api/auth/ok': 'ok',
  'GET /api/auth/error': 'error',
  'POST /api/auth/two-factor/enable': 'enableTwoFactor',
  'POST /api/auth/two-factor/get-totp-uri': 'getTotpUri',
  'POST /api/auth/two-factor/generate-backup-codes': 'generateBackupCodes',
  'POST /api/auth/two-factor/disable': 'disableTwoFactor',
  'POST /api/auth/two-factor/verify-totp': 'verifyTotp',
  'POST /api/auth/two-factor/verify-backup-code': 'verifyBackupCode',
  'GET /api/auth/security-notice': 'securityNoticePage',
  'POST /api/auth/secure-account': 'secureAccount',
  'POST /api/auth/email-otp/send-verification-otp': 'sendEmailVerificationOTP',
  'POST /api/auth/email-otp/request-password-reset': 'requestPasswordResetWithEmailOTP',
  'POST /api/auth/sign-in/email-otp': 'signInWithEmailOTP',
  'POST /api/auth/email-otp/verify-email': 'verifyEmailOTP',
  'POST /api/auth/email-otp/reset-password': 'resetPasswordWithEmailOTP',
  'POST /api/auth/sign-in/magic-link': 'signInWithMagicLink',
  'GET /api/auth/magic-link/verify': 'verifyMagicLink',
  'POST /api/auth/magic-link/verify': 'confirmMagicLink',
  'GET /api/auth/passkey/generate-register-options': 'generatePasskeyRegistrationOptions',
  'POST /api/auth/passkey/verify-registration': 'passkeyVerifyRegistration',
  'GET /api/auth/passkey/generate-authenticate-options': 'passkeyGenerateAuthenticateOptions',
  'POST /api/auth/passkey/verify-authentication': 'passkeyVerifyAuthentication',
  'GET /api/auth/passkey/list-user-passkeys': 'listPasskeys',
  'POST /api/auth/passkey/update-passkey': 'updatePasskey',
  'POST /api/auth/passkey/delete-passkey': 'deletePasskey',
  'POST /api/v1/admin/users/{id}/ban': 'banUser',
  'POST /api/v1/admin/users/{id}/remove-second-factor': 'removeUserSecondFactor',
  'POST /api/v1/admin/users/{id}/unban': 'unbanUser',
}

t.test('the routes appear in the OpenAPI document under their operation ids', async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json()
  for (const [route, operationId] of Object.entries(OPERATION_IDS)) {
    const [method, path] = route.split(' ') as [string, string]
    t.equal(doc.paths[path]?.[method.toLowerCase()]?.operationId, operationId, route)
  }
  // A generated client names one call per id: every operation has one, and no two share it.
  const ids = Object.values(doc.paths).flatMap((ops) => Object.values(ops as Record<string, { operationId?: string }>))
  const missing = ids.filter((op) => !op.operationId)
  t.same(missing, [], 'every operation has an id')
  const named = ids.map((op) => op.operationId)
  t.same(
    named.filter((id, i) => named.indexOf(id) !== i),
    [],
    'no two operations share an id',
  )
})
