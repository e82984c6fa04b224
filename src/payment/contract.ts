// Payments of the signed-in user: procedures payment.<name>, REST under /api/v1/payments. The
// gateways' webhook and the sandbox's page are plain HTTP routes (routes.ts), not operations.
import { operation } from '../shared/operation.js'
import { ErrorSchema } from '../shared/errors.js'
import { CheckoutBody, CheckoutResponse, ListQuery, PaymentIdParams, PaymentPageSchema, VerifyResponse } from './schemas.js'

const tags = ['payments']
const gatewayDown = { 502: ErrorSchema }

export const paymentContract = {
  payment: {
    createCheckout: operation
      .route({
        method: 'POST',
        path: '/payments/checkout',
        successStatus: 201,
        tags,
        summary: 'Start a purchase: creates a pending payment and returns the gateway page to send the browser to',
        description: 'returnUrl is a relative path or an absolute URL on a trusted origin (else 403 INVALID_CALLBACK_URL).',
      })
      .meta({ errors: { 403: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema, ...gatewayDown, 503: ErrorSchema } })
      .input(CheckoutBody)
      .output(CheckoutResponse),

    verifyPayment: operation
      .route({
        method: 'POST',
        path: '/payments/{paymentId}/verify',
        tags,
        summary: "Ask the gateway (server-to-server) for the payment's status and apply it",
      })
      .meta({ errors: { 404: ErrorSchema, ...gatewayDown } })
      .input(PaymentIdParams)
      .output(VerifyResponse),

    listPayments: operation
      .route({ method: 'GET', path: '/payments', tags, summary: "The signed-in user's payments, newest first" })
      .input(ListQuery)
      .output(PaymentPageSchema),
  },
}
