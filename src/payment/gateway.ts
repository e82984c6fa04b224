// The seam between our payment records and an external gateway. Adapters: stripe.ts, midtrans.ts,
// sandbox.ts. The gateway is the source of truth about money; nothing the browser says is.
import type { IncomingHttpHeaders } from 'node:http'
import { AppError } from '../shared/errors.js'
import type { Product } from './products.js'
import type { PaymentStatus, Provider } from './tables.js'

export interface CheckoutRequest {
  paymentId: string
  product: Product
  productName: string
  /** Integer rupiah. */
  amount: number
  currency: 'IDR'
  /** Absolute URLs the gateway sends the browser back to. */
  successUrl: string
  cancelUrl: string
  expiresAt: Date
  customerEmail?: string
}

export interface CheckoutSession {
  /** Stripe's Checkout Session id, Midtrans' order id, the sandbox's payment id. */
  providerRef: string
  redirectUrl: string
}

/** What the gateway says about a payment right now, asked server-to-server. */
export interface GatewayState {
  status: PaymentStatus
  /** Integer rupiah as the gateway recorded it; null when the gateway has no amount yet. */
  amount: number | null
  currency: string | null
}

/** A verified notification: who it is about. The status is always asked with fetchStatus. */
export interface WebhookNotice {
  eventKey: string
  eventType: string
  /** Our payment id when the notification carries it (client_reference_id, order_id). */
  paymentId: string | null
}

export interface PaymentRef {
  id: string
  providerRef: string | null
  amount: number
  expiresAt: Date
}

export interface PaymentGateway {
  readonly provider: Provider
  createCheckout(request: CheckoutRequest): Promise<CheckoutSession>
  fetchStatus(payment: PaymentRef): Promise<GatewayState>
  /** Verifies the signature over the raw body; throws a 400 AppError when it does not verify. */
  parseWebhook(rawBody: Buffer, headers: IncomingHttpHeaders): Promise<WebhookNotice>
}

/** A payment the gateway has no record of yet: expired once its checkout has, pending until then. */
export function notYetAtGateway(payment: PaymentRef, now: Date): GatewayState {
  const expired = now.getTime() > payment.expiresAt.getTime()
  return { status: expired ? 'expired' : 'pending', amount: null, currency: null }
}

export const badSignature = (message = 'Webhook signature does not verify') => new AppError(400, 'BAD_REQUEST', message)

/** A gateway that failed or answered nonsense: the client may retry. Never echoes the gateway's text. */
export const gatewayError = (cause?: unknown) =>
  new AppError(502, 'BAD_GATEWAY', 'The payment gateway did not answer as expected', { cause })

export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}
