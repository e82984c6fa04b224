// Payments of the signed-in user: procedures payment.<name>, REST under /api/v1/payments. The
// gateways' webhook and the sandbox's page are plain HTTP routes (routes.ts), not operations.
import { failsWith, operation } from '../shared/operation.js'
import { CheckoutBody, CheckoutResponse, ListQuery, PaymentIdParams, PaymentPageSchema, VerifyResponse } from './schemas.js'

export const paymentContract = operation.tag('payments').router({
  payment: {
    createCheckout: operation
      .route({
        method: 'POST',
        path: '/payments/checkout',
        successStatus: 201,
        summary: 'Start a purchase: creates a pending payment and returns the gateway page to send the browser to',
        description: 'returnUrl is a relative path or an absolute URL on a trusted origin (else 403 INVALID_CALLBACK_URL).',
      })
      .meta({ errors: failsWith(403, 404, 409, 502, 503) })
      .input(CheckoutBody)
      .output(CheckoutResponse),

    verifyPayment: operation
      .route({
        method: 'POST',
        path: '/payments/{paymentId}/verify',
        summary: "Ask the gateway (server-to-server) for the payment's status and apply it",
      })
      .meta({ errors: failsWith(404, 502) })
      .input(PaymentIdParams)
      .output(VerifyResponse),

    listPayments: operation
      .route({ method: 'GET', path: '/payments', summary: "The signed-in user's payments, newest first" })
      .input(ListQuery)
      .output(PaymentPageSchema),
  },
})
