// Local HTTP servers on 127.0.0.1 that answer like Stripe's and Midtrans' APIs, for the payment
// tests. They keep their own ledger; the test moves money on it and produces the gateways' signed
// notifications exactly as the real gateways compute them.
import { createHash, randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import Stripe from 'stripe'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { call, createAs, signUp, type TestUser } from './app.js'

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

function send(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const rid = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`

// ---------------------------------------------------------------- Stripe

interface FakeSession {
  id: string
  object: 'checkout.session'
  url: string
  status: 'open' | 'complete' | 'expired'
  payment_status: 'unpaid' | 'paid'
  amount_total: number
  currency: string
  client_reference_id: string | null
  metadata: Record<string, string>
  payment_intent: string | null
  expires_at: number
  success_url: string
  cancel_url: string
  mode: string
}

interface FakeCharge {
  id: string
  object: 'charge'
  amount: number
  amount_refunded: number
  refunded: boolean
  payment_intent: string
  metadata: Record<string, string>
}

export class FakeStripe {
  readonly secretKey = 'sk_test_fake_0123456789'
  readonly webhookSecret = 'whsec_test_fake_0123456789'
  readonly sessions = new Map<string, FakeSession>()
  readonly charges = new Map<string, FakeCharge>()
  readonly intents = new Map<string, { id: string; status: string; charge: string | null }>()
  readonly createCalls: Array<{ idempotencyKey: string | undefined; form: URLSearchParams }> = []
  readonly signer = new Stripe('sk_test_signer_only')
  url = ''
  private readonly byIdempotencyKey = new Map<string, string>()

  async start(): Promise<this> {
    this.url = await listen(createServer((req, res) => void this.handle(req, res)))
    return this
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    if (req.headers.authorization !== `Bearer ${this.secretKey}`) {
      return send(res, 401, { error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } })
    }
    const url = new URL(req.url ?? '/', 'http://x')
    const body = await readBody(req)
    if (req.method === 'POST' && url.pathname === '/v1/checkout/sessions') {
      const form = new URLSearchParams(body)
      const key = req.headers['idempotency-key'] as string | undefined
      this.createCalls.push({ idempotencyKey: key, form })
      const again = key ? this.byIdempotencyKey.get(key) : undefined
      if (again) return send(res, 200, this.sessions.get(again))
      const metadata: Record<string, string> = {}
      for (const [k, v] of form) {
        const m = /^metadata\[(.+)\]$/.exec(k)
        if (m) metadata[m[1]!] = v
      }
      const session: FakeSession = {
        id: rid('cs_test'),
        object: 'checkout.session',
        url: '',
        status: 'open',
        payment_status: 'unpaid',
        amount_total:
          Number(form.get('line_items[0][price_data][unit_amount]')) * Number(form.get('line_items[0][quantity]') ?? 1),
        currency: form.get('line_items[0][price_data][currency]') ?? '',
        client_reference_id: form.get('client_reference_id'),
        metadata,
        payment_intent: null,
        expires_at: Number(form.get('expires_at')),
        success_url: form.get('success_url') ?? '',
        cancel_url: form.get('cancel_url') ?? '',
        mode: form.get('mode') ?? '',
      }
      session.url = `https://checkout.stripe.test/c/pay/${session.id}`
      this.sessions.set(session.id, session)
      if (key) this.byIdempotencyKey.set(key, session.id)
      return send(res, 200, session)
    }
    if (req.method === 'GET' && url.pathname === '/v1/checkout/sessions') {
      const intent = url.searchParams.get('payment_intent')
      const data = [...this.sessions.values()].filter((s) => s.payment_intent === intent).slice(0, 1)
      return send(res, 200, { object: 'list', data, has_more: false, url: '/v1/checkout/sessions' })
    }
    const m = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(url.pathname)
    if (req.method === 'GET' && m) {
      const session = this.sessions.get(decodeURIComponent(m[1]!))
      if (!session) return send(res, 404, { error: { type: 'invalid_request_error', message: 'No such checkout.session' } })
      const expand = [...url.searchParams].filter(([k]) => /^expand\[\d*\]$/.test(k)).map(([, v]) => v)
      return send(res, 200, expand.includes('payment_intent.latest_charge') ? this.expanded(session) : session)
    }
    send(res, 404, {
      error: { type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${url.pathname})` },
    })
  }

  private expanded(session: FakeSession) {
    if (!session.payment_intent) return session
    const intent = this.intents.get(session.payment_intent)!
    return {
      ...session,
      payment_intent: {
        id: intent.id,
        object: 'payment_intent',
        status: intent.status,
        latest_charge: intent.charge ? this.charges.get(intent.charge) : null,
      },
    }
  }

  sessionFor(paymentId: string): FakeSession {
    const found = [...this.sessions.values()].find((s) => s.client_reference_id === paymentId)
    if (!found) throw new Error(`no session for ${paymentId}`)
    return found
  }

  /** The customer pays: the session completes with a succeeded intent and a charge. */
  pay(paymentId: string, options: { amountTotal?: number; currency?: string } = {}): FakeSession {
    const session = this.sessionFor(paymentId)
    const intentId = rid('pi')
    const chargeId = rid('ch')
    const amount = options.amountTotal ?? session.amount_total
    this.charges.set(chargeId, {
      id: chargeId,
      object: 'charge',
      amount,
      amount_refunded: 0,
      refunded: false,
      payment_intent: intentId,
      metadata: {},
    })
    this.intents.set(intentId, { id: intentId, status: 'succeeded', charge: chargeId })
    Object.assign(session, { status: 'complete', payment_status: 'paid', payment_intent: intentId, amount_total: amount })
    if (options.currency) session.currency = options.currency
    return session
  }

  expire(paymentId: string): FakeSession {
    const session = this.sessionFor(paymentId)
    session.status = 'expired'
    return session
  }

  refund(paymentId: string): FakeCharge {
    const session = this.sessionFor(paymentId)
    const charge = this.charges.get(this.intents.get(session.payment_intent!)!.charge!)!
    Object.assign(charge, { refunded: true, amount_refunded: charge.amount })
    return charge
  }

  /** An event as Stripe delivers it, with the payload and its Stripe-Signature header. */
  event(type: string, object: unknown, options: { timestamp?: number; secret?: string } = {}) {
    const payload = JSON.stringify(
      {
        id: rid('evt'),
        object: 'event',
        api_version: Stripe.API_VERSION,
        created: Math.floor(Date.now() / 1000),
        type,
        livemode: false,
        pending_webhooks: 1,
        request: { id: null, idempotency_key: null },
        data: { object },
      },
      null,
      2,
    )
    const signature = this.signer.webhooks.generateTestHeaderString({
      payload,
      secret: options.secret ?? this.webhookSecret,
      ...(options.timestamp !== undefined ? { timestamp: options.timestamp } : {}),
    })
    return { payload, signature }
  }
}

// ---------------------------------------------------------------- Midtrans

interface FakeOrder {
  orderId: string
  grossAmount: number
  transactionId: string | null
  transactionStatus: string | null
  fraudStatus: string
  statusGrossAmount: string
  body: Record<string, unknown>
}

const STATUS_CODES: Record<string, string> = {
  settlement: '200',
  capture: '200',
  refund: '200',
  pending: '201',
  deny: '202',
  cancel: '202',
  expire: '407',
  failure: '202',
}

export class FakeMidtrans {
  readonly serverKey = 'SB-Mid-server-fake0123456789'
  readonly orders = new Map<string, FakeOrder>()
  readonly snapCalls: Array<Record<string, unknown>> = []
  url = ''

  async start(): Promise<this> {
    this.url = await listen(createServer((req, res) => void this.handle(req, res)))
    return this
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const expected = `Basic ${Buffer.from(`${this.serverKey}:`).toString('base64')}`
    if (req.headers.authorization !== expected) {
      return send(res, 401, { status_code: '401', status_message: 'Access denied due to unauthorized transaction' })
    }
    const url = new URL(req.url ?? '/', 'http://x')
    const body = await readBody(req)
    if (req.method === 'POST' && url.pathname === '/snap/v1/transactions') {
      const parsed = JSON.parse(body) as { transaction_details: { order_id: string; gross_amount: number } }
      this.snapCalls.push(parsed)
      const { order_id: orderId, gross_amount: grossAmount } = parsed.transaction_details
      if (this.orders.has(orderId)) return send(res, 400, { error_messages: ['transaction_details.order_id sudah digunakan'] })
      this.orders.set(orderId, {
        orderId,
        grossAmount,
        transactionId: null,
        transactionStatus: null,
        fraudStatus: 'accept',
        statusGrossAmount: `${grossAmount}.00`,
        body: parsed,
      })
      const token = randomBytes(16).toString('hex')
      return send(res, 201, { token, redirect_url: `https://app.sandbox.midtrans.test/snap/v4/redirection/${token}` })
    }
    const m = /^\/v2\/([^/]+)\/status$/.exec(url.pathname)
    if (req.method === 'GET' && m) {
      const order = this.orders.get(decodeURIComponent(m[1]!))
      if (!order?.transactionStatus) {
        return send(res, 404, {
          status_code: '404',
          status_message: "Transaction doesn't exist.",
          id: randomBytes(8).toString('hex'),
        })
      }
      return send(res, 200, this.statusBody(order))
    }
    send(res, 404, { status_code: '404', status_message: 'not found' })
  }

  private statusBody(order: FakeOrder) {
    const statusCode = STATUS_CODES[order.transactionStatus!] ?? '200'
    return {
      status_code: statusCode,
      status_message: 'Success, transaction is found',
      transaction_id: order.transactionId,
      order_id: order.orderId,
      gross_amount: order.statusGrossAmount,
      currency: 'IDR',
      payment_type: 'bank_transfer',
      transaction_time: '2026-11-22 11:00:00',
      transaction_status: order.transactionStatus,
      fraud_status: order.fraudStatus,
      signature_key: this.sign(order.orderId, statusCode, order.statusGrossAmount),
    }
  }

  sign(orderId: string, statusCode: string, grossAmount: string, serverKey = this.serverKey): string {
    return createHash('sha512')
      .update(orderId + statusCode + grossAmount + serverKey)
      .digest('hex')
  }

  /** Moves the order at the gateway; `grossAmount` tampers with what the gateway reports. */
  setStatus(orderId: string, transactionStatus: string, options: { grossAmount?: string; fraudStatus?: string } = {}) {
    const order = this.orders.get(orderId)
    if (!order) throw new Error(`no order ${orderId}`)
    order.transactionId ??= randomBytes(8).toString('hex')
    order.transactionStatus = transactionStatus
    if (options.grossAmount) order.statusGrossAmount = options.grossAmount
    if (options.fraudStatus) order.fraudStatus = options.fraudStatus
  }

  /** The HTTP notification Midtrans posts for the order's current status (signed with `serverKey`). */
  notification(orderId: string, options: { serverKey?: string; transactionStatus?: string } = {}): string {
    const order = this.orders.get(orderId)!
    const status = this.statusBody(order)
    if (options.transactionStatus) status.transaction_status = options.transactionStatus
    status.signature_key = this.sign(order.orderId, status.status_code, status.gross_amount, options.serverKey ?? this.serverKey)
    return JSON.stringify(status)
  }
}

// ---------------------------------------------------------------- shared steps of the payment tests

/** A compatibility result of the user, through the API. */
export async function createResult(app: FastifyInstance, user: TestUser): Promise<string> {
  const body = {
    partner: { name: 'Partner', birthDate: '1990-05-17' },
    systems: ['astrology'],
    score: 72,
    summary: { lite: 'ok' },
  }
  return (await createAs<{ id: string }>(app, user, '/api/v1/compatibility/results', body)).id
}

/**
 * A new member with a compatibility result and a started checkout of that result's deep insights,
 * returning to `returnUrl(resultId)` when given.
 */
export async function deepInsightsCheckout(app: FastifyInstance, returnUrl?: (resultId: string) => string) {
  const user = await signUp(app)
  const resultId = await createResult(app, user)
  const checkout = await startCheckout(app, user, {
    product: 'deep_insights',
    resultId,
    ...(returnUrl ? { returnUrl: returnUrl(resultId) } : {}),
  })
  return { user, resultId, checkout }
}

/** POST /api/v1/payments/checkout as the user, with this body as is; the response, whatever it is. */
export function postCheckout(app: FastifyInstance, user: TestUser, body: unknown) {
  return call(app, 'POST', '/api/v1/payments/checkout', { cookie: user.cookie, body })
}

export async function startCheckout(
  app: FastifyInstance,
  user: TestUser,
  body: { product: string; resultId?: string; returnUrl?: string },
): Promise<{ paymentId: string; provider: string; redirectUrl: string; expiresAt: string }> {
  return createAs(app, user, '/api/v1/payments/checkout', { returnUrl: '/payments/done', ...body })
}

export async function verify(app: FastifyInstance, user: TestUser, paymentId: string) {
  return call(app, 'POST', `/api/v1/payments/${paymentId}/verify`, { cookie: user.cookie, body: {} })
}

export function postWebhook(app: FastifyInstance, provider: string, payload: string, headers: Record<string, string> = {}) {
  return app.inject({
    method: 'POST',
    url: `/api/v1/payments/webhook/${provider}`,
    headers: { 'content-type': 'application/json', ...headers },
    payload,
  })
}

export async function userPlan(app: FastifyInstance, userId: string) {
  return app.db.selectFrom('user').select(['plan', 'plan_expires_at']).where('id', '=', userId).executeTakeFirstOrThrow()
}

export async function paymentRow(app: FastifyInstance, paymentId: string) {
  return app.db.selectFrom('payment').selectAll().where('id', '=', paymentId).executeTakeFirstOrThrow()
}

export async function purchasesOf(app: FastifyInstance, resultId: string) {
  return app.db.selectFrom('deep_insights_purchase').selectAll().where('result_id', '=', resultId).execute()
}

export async function auditActions(app: FastifyInstance, paymentId: string): Promise<string[]> {
  const rows = await app.db.selectFrom('audit_event').select('action').where('target_id', '=', paymentId).orderBy('at').execute()
  return rows.map((r) => r.action)
}
