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
  'DELETE /api/v1/me': 'deleteMyAccount',
  'GET /api/v1/admin/users': 'listUsers',
  'GET /api/v1/admin/users/{id}': 'getUser',
  'POST /api/v1/admin/users/{id}/make-admin': 'makeUserAdmin',
  'POST /api/v1/admin/users/{id}/role': 'setUserRole',
  'POST /api/v1/admin/users/{id}/premium-plus': 'setUserPremiumPlus',
  'POST /api/v1/admin/users/{id}/plan': 'setUserPlan',
  'GET /api/v1/admin/analytics/usage': 'getUsageAnalytics',
  'GET /api/v1/admin/audit': 'listAuditEvents',
}

t.test('the routes appear in the OpenAPI document under their operation ids', async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json()
  for (const [route, operationId] of Object.entries(OPERATION_IDS)) {
    const [method, path] = route.split(' ') as [string, string]
    t.equal(doc.paths[path]?.[method.toLowerCase()]?.operationId, operationId, route)
  }
})
