// Midtrans Snap: checkout by POST /snap/v1/transactions, truth by GET /v2/{order_id}/status.
// The order id is our payment id. Amounts are whole rupiah.
import { createHash, timingSafeEqual } from 'node:crypto'
import type { Clock } from '../shared/clock.js'
import type { CheckoutRequest, CheckoutSession, GatewayState, PaymentGateway, PaymentRef, WebhookNotice } from './gateway.js'
import { badSignature, gatewayError, notYetAtGateway } from './gateway.js'
import type { PaymentStatus } from './tables.js'

interface MidtransOptions {
  serverKey: string
  production: boolean
  /** One base for both Snap and the Core API (tests). */
  apiBase?: string
}

const TIMEOUT_MS = 15_000

/** Midtrans' transaction_status (and fraud_status for card captures) in our terms. */
export function mapMidtransStatus(transactionStatus: string, fraudStatus?: string): PaymentStatus {
  switch (transactionStatus) {
    case 'settlement':
      return 'paid'
    case 'capture':
      // A card capture under fraud review ("challenge") is not money yet.
      return fraudStatus === undefined || fraudStatus === 'accept' ? 'paid' : 'pending'
    case 'cancel':
    case 'failure':
      return 'failed'
    case 'expire':
      return 'expired'
    case 'refund':
    case 'chargeback':
      return 'refunded'
    // Partial refunds and chargebacks leave the purchase in place; the money mostly stayed.
    case 'partial_refund':
    case 'partial_chargeback':
      return 'paid'
    default: // pending, deny (the customer may retry with another method), authorize
      return 'pending'
  }
}

/** `yyyy-MM-dd HH:mm:ss +0000`, the format Snap's expiry.start_time expects. */
function snapTime(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace('T', ' ')} +0000`
}

export class MidtransGateway implements PaymentGateway {
  readonly provider = 'midtrans' as const
  private readonly snapBase: string
  private readonly apiBase: string
  private readonly authorization: string

  constructor(
    private readonly options: MidtransOptions,
    private readonly clock: Clock,
  ) {
    this.snapBase = options.apiBase ?? (options.production ? 'https://app.midtrans.com' : 'https://app.sandbox.midtrans.com')
    this.apiBase = options.apiBase ?? (options.production ? 'https://api.midtrans.com' : 'https://api.sandbox.midtrans.com')
    this.authorization = `Basic ${Buffer.from(`${options.serverKey}:`).toString('base64')}`
  }

  private async request(url: string, init: RequestInit): Promise<{ status: number; body: Record<string, unknown> }> {
    try {
      const res = await fetch(url, {
        ...init,
        headers: { accept: 'application/json', 'content-type': 'application/json', authorization: this.authorization },
        signal: AbortSignal.timeout(TIMEOUT_MS),
      })
      const body = (await res.json()) as unknown
      if (!body || typeof body !== 'object') throw new Error('not a JSON object')
      return { status: res.status, body: body as Record<string, unknown> }
    } catch (err) {
      throw gatewayError(err)
    }
  }

  async createCheckout(request: CheckoutRequest): Promise<CheckoutSession> {
    const minutes = Math.max(1, Math.round((request.expiresAt.getTime() - this.clock.now().getTime()) / 60_000))
    const { status, body } = await this.request(`${this.snapBase}/snap/v1/transactions`, {
      method: 'POST',
      body: JSON.stringify({
        transaction_details: { order_id: request.paymentId, gross_amount: request.amount },
        item_details: [{ id: request.product, price: request.amount, quantity: 1, name: request.productName.slice(0, 50) }],
        ...(request.customerEmail ? { customer_details: { email: request.customerEmail } } : {}),
        callbacks: { finish: request.successUrl },
        expiry: { start_time: snapTime(this.clock.now()), unit: 'minute', duration: minutes },
        custom_field1: request.product,
      }),
    })
    if (status !== 201 && status !== 200) throw gatewayError()
    if (typeof body.redirect_url !== 'string') throw gatewayError()
    return { providerRef: request.paymentId, redirectUrl: body.redirect_url }
  }

  async fetchStatus(payment: PaymentRef): Promise<GatewayState> {
    const orderId = payment.providerRef ?? payment.id
    const { status, body } = await this.request(`${this.apiBase}/v2/${encodeURIComponent(orderId)}/status`, { method: 'GET' })
    // Midtrans answers "404" in the body (HTTP 200 or 404) until the customer picks a payment method.
    if (status === 404 || body.status_code === '404') return notYetAtGateway(payment, this.clock.now())
    if (status !== 200 || typeof body.transaction_status !== 'string' || body.order_id !== orderId) throw gatewayError()
    const gross = typeof body.gross_amount === 'string' ? Number(body.gross_amount) : null
    return {
      status: mapMidtransStatus(body.transaction_status, typeof body.fraud_status === 'string' ? body.fraud_status : undefined),
      amount: gross !== null && Number.isFinite(gross) ? gross : null,
      currency: typeof body.currency === 'string' ? body.currency.toUpperCase() : 'IDR',
    }
  }

  // Midtrans signs fields, not the body or a header: SHA-512(order_id + status_code + gross_amount + server_key).
  async parseWebhook(rawBody: Buffer): Promise<WebhookNotice> {
    let body: Record<string, unknown>
    try {
      body = JSON.parse(rawBody.toString('utf8')) as Record<string, unknown>
    } catch {
      throw badSignature('Notification is not valid JSON')
    }
    const { order_id: orderId, status_code: statusCode, gross_amount: grossAmount, signature_key: signatureKey } = body ?? {}
    if (
      typeof orderId !== 'string' ||
      typeof statusCode !== 'string' ||
      typeof grossAmount !== 'string' ||
      typeof signatureKey !== 'string'
    ) {
      throw badSignature('Notification is missing its signature fields')
    }
    const expected = createHash('sha512')
      .update(orderId + statusCode + grossAmount + this.options.serverKey)
      .digest()
    const given = Buffer.from(signatureKey, 'hex')
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw badSignature()
    const transactionStatus = typeof body.transaction_status === 'string' ? body.transaction_status : 'unknown'
    const transactionId = typeof body.transaction_id === 'string' ? body.transaction_id : ''
    return {
      eventKey: `${orderId}:${transactionId}:${transactionStatus}:${statusCode}`,
      eventType: transactionStatus,
      paymentId: orderId,
    }
  }
}
