// Stripe Checkout Sessions through the official SDK. STRIPE_API_BASE points the SDK elsewhere (tests).
// The SDK (hundreds of modules) is loaded on the first call that needs it, not at start-up: a
// server without payments, or before its first checkout, never pays for it.
import type { IncomingHttpHeaders } from 'node:http'
import type Stripe from 'stripe'
import type { CheckoutRequest, CheckoutSession, GatewayState, PaymentGateway, PaymentRef, WebhookNotice } from './gateway.js'
import { badSignature, gatewayError, header } from './gateway.js'

// IDR is not on Stripe's zero-decimal list: Stripe expects amounts in sen (rupiah x 100), so
// 49000 IDR is sent as unit_amount 4900000 and read back divided by 100.
const MINOR_UNITS = 100

interface StripeOptions {
  secretKey: string
  webhookSecret: string
  apiBase?: string
}

export class StripeGateway implements PaymentGateway {
  readonly provider = 'stripe' as const
  private client: Promise<Stripe> | undefined

  constructor(private readonly options: StripeOptions) {}

  /** The SDK's client, made by the first call; a failed load is not kept, the next call tries again. */
  private sdk(): Promise<Stripe> {
    this.client ??= this.connect().catch((err: unknown) => {
      this.client = undefined
      throw gatewayError(err)
    })
    return this.client
  }

  private async connect(): Promise<Stripe> {
    const { default: StripeSdk } = await import('stripe')
    const { options } = this
    const base = options.apiBase ? new URL(options.apiBase) : undefined
    return new StripeSdk(options.secretKey, {
      ...(base
        ? {
            host: base.hostname,
            port: base.port || (base.protocol === 'https:' ? 443 : 80),
            protocol: base.protocol === 'https:' ? 'https' : 'http',
          }
        : {}),
      maxNetworkRetries: 2,
      timeout: 15_000,
      telemetry: false,
    })
  }

  async createCheckout(request: CheckoutRequest): Promise<CheckoutSession> {
    let session: Stripe.Checkout.Session
    try {
      session = await (await this.sdk()).checkout.sessions.create(
        {
          mode: 'payment',
          line_items: [
            {
              quantity: 1,
              price_data: {
                currency: 'idr',
                unit_amount: request.amount * MINOR_UNITS,
                product_data: { name: request.productName },
              },
            },
          ],
          client_reference_id: request.paymentId,
          metadata: { paymentId: request.paymentId, product: request.product },
          payment_intent_data: { metadata: { paymentId: request.paymentId, product: request.product } },
          success_url: request.successUrl,
          cancel_url: request.cancelUrl,
          expires_at: Math.floor(request.expiresAt.getTime() / 1000),
          ...(request.customerEmail ? { customer_email: request.customerEmail } : {}),
        },
        // A retried create (network error, double submit) returns the same session, not a second one.
        { idempotencyKey: `checkout-${request.paymentId}` },
      )
    } catch (err) {
      throw gatewayError(err)
    }
    if (!session.url) throw gatewayError()
    return { providerRef: session.id, redirectUrl: session.url }
  }

  async fetchStatus(payment: PaymentRef): Promise<GatewayState> {
    if (!payment.providerRef) return { status: 'pending', amount: null, currency: null }
    let session: Stripe.Checkout.Session
    try {
      session = await (await this.sdk()).checkout.sessions.retrieve(payment.providerRef, {
        expand: ['payment_intent.latest_charge'],
      })
    } catch (err) {
      throw gatewayError(err)
    }
    if (session.client_reference_id !== payment.id) throw gatewayError()
    const amount = session.amount_total === null ? null : session.amount_total / MINOR_UNITS
    const currency = session.currency ? session.currency.toUpperCase() : null
    const intent = typeof session.payment_intent === 'object' ? session.payment_intent : null
    const charge = intent && typeof intent.latest_charge === 'object' ? intent.latest_charge : null

    if (session.payment_status === 'paid') {
      // Only a full refund takes the grant back; a partial refund is a goodwill gesture.
      const refunded = charge !== null && (charge.refunded || charge.amount_refunded >= charge.amount)
      return { status: refunded ? 'refunded' : 'paid', amount, currency }
    }
    if (session.status === 'expired') return { status: 'expired', amount, currency }
    // A completed session still unpaid is an asynchronous method (bank transfer) in flight, or failed.
    if (
      session.status === 'complete' &&
      intent &&
      (intent.status === 'canceled' || intent.status === 'requires_payment_method')
    ) {
      return { status: 'failed', amount, currency }
    }
    return { status: 'pending', amount, currency }
  }

  async parseWebhook(rawBody: Buffer, headers: IncomingHttpHeaders): Promise<WebhookNotice> {
    const signature = header(headers, 'stripe-signature')
    if (!signature) throw badSignature('Stripe-Signature header is missing')
    const stripe = await this.sdk()
    let event: Stripe.Event
    try {
      // Verified over the exact bytes received, with Stripe's default 5-minute tolerance.
      event = stripe.webhooks.constructEvent(rawBody, signature, this.options.webhookSecret)
    } catch {
      throw badSignature()
    }
    return { eventKey: event.id, eventType: event.type, paymentId: await this.paymentIdOf(event) }
  }

  private async paymentIdOf(event: Stripe.Event): Promise<string | null> {
    const object = event.data.object as unknown as Record<string, unknown>
    if (event.type.startsWith('checkout.session.')) {
      return typeof object.client_reference_id === 'string' ? object.client_reference_id : null
    }
    if (event.type === 'charge.refunded' || event.type === 'charge.refund.updated') {
      const metadata = object.metadata as Record<string, string> | undefined
      if (metadata?.paymentId) return metadata.paymentId
      const intent = typeof object.payment_intent === 'string' ? object.payment_intent : null
      if (!intent) return null
      // The charge does not always carry the intent's metadata: find the session that made it.
      try {
        const sessions = await (await this.sdk()).checkout.sessions.list({ payment_intent: intent, limit: 1 })
        return sessions.data[0]?.client_reference_id ?? null
      } catch (err) {
        throw gatewayError(err)
      }
    }
    return null
  }
}
