// Payments: checkout, verify, webhook and listing. The webhook and verify-payment both ask the
// gateway server-to-server, then apply what it says with applyGatewayState() (transitions.ts).
// Nothing the browser says counts.
import type { FastifyBaseLogger } from 'fastify'
import type { DB } from '../../db/index.js'
import { assertResultOwned } from '../compatibility/service.js'
import type { Config } from '../config.js'
import type { Clock } from '../shared/clock.js'
import { signedIn, type RequestContext } from '../shared/context.js'
import { AppError, conflict, notFound } from '../shared/errors.js'
import { newId } from '../shared/ids.js'
import { byCreatedAt, toPage, type Page, type PageRequest } from '../shared/pagination.js'
import { effectivePlan } from '../usage/plans.js'
import type { CheckoutSession, PaymentGateway, WebhookNotice } from './gateway.js'
import { MidtransGateway } from './midtrans.js'
import { CHECKOUT_TTL_MINUTES, PRODUCT_TABLE, type Product } from './products.js'
import {
  compareAndSetStatus,
  findPayment,
  findUserPayment,
  findUserPlan,
  insertPayment,
  isResultUnlocked,
  listUserPayments,
  recordWebhookEvent,
  setProviderRef,
} from './queries.js'
import { SandboxGateway } from './sandbox.js'
import { StripeGateway } from './stripe.js'
import { applyGatewayState } from './transitions.js'
import type { PaymentRow, PaymentStatus, Provider } from './tables.js'

export interface Gateways {
  /** The gateway new checkouts use (PAYMENT_GATEWAY); undefined when payments are not configured. */
  active?: PaymentGateway
  /** Every configured gateway: payments started on one still complete after switching to another. */
  byProvider: Map<Provider, PaymentGateway>
}

export interface PaymentDeps {
  db: DB
  clock: Clock
  gateways: Gateways
  webOrigin: string
}

export function buildGateways(config: Config, clock: Clock): Gateways {
  const byProvider = new Map<Provider, PaymentGateway>()
  const { stripe, midtrans, gateway } = config.payments
  if (stripe.secretKey && stripe.webhookSecret) {
    byProvider.set(
      'stripe',
      new StripeGateway({ secretKey: stripe.secretKey, webhookSecret: stripe.webhookSecret, apiBase: stripe.apiBase }),
    )
  }
  if (midtrans.serverKey) {
    byProvider.set(
      'midtrans',
      new MidtransGateway({ serverKey: midtrans.serverKey, production: midtrans.production, apiBase: midtrans.apiBase }, clock),
    )
  }
  // The sandbox accepts self-signed "payments": never in production (config refuses it there too).
  if (config.env !== 'production')
    byProvider.set('sandbox', new SandboxGateway(config.auth.secrets[0]!, config.auth.baseUrl, clock))
  if (gateway === 'stripe' && !byProvider.has('stripe')) {
    throw new Error('PAYMENT_GATEWAY=stripe needs STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET')
  }
  if (gateway === 'midtrans' && !byProvider.has('midtrans')) throw new Error('PAYMENT_GATEWAY=midtrans needs MIDTRANS_SERVER_KEY')
  return { active: gateway ? byProvider.get(gateway) : undefined, byProvider }
}

export interface PaymentView {
  id: string
  product: string
  amount: number
  currency: string
  status: PaymentStatus
  provider: Provider
  resultId: string | null
  grantedAt: Date | null
  expiresAt: Date
  createdAt: Date
  updatedAt: Date
}

const toPaymentView = (p: PaymentRow): PaymentView => ({
  id: p.id,
  product: p.product,
  amount: p.amount,
  currency: p.currency,
  status: p.status,
  provider: p.provider,
  resultId: p.result_id,
  grantedAt: p.granted_at,
  expiresAt: p.expires_at,
  createdAt: p.created_at,
  updatedAt: p.updated_at,
})

/** Where the gateway sends the browser back: the returnUrl (relative = on the web front end) plus our id. */
function returnUrls(returnUrl: string, webOrigin: string, paymentId: string): { success: string; cancel: string } {
  const success = new URL(returnUrl, webOrigin)
  success.searchParams.set('paymentId', paymentId)
  const cancel = new URL(success)
  cancel.searchParams.set('status', 'cancelled')
  return { success: success.toString(), cancel: cancel.toString() }
}

export interface Checkout {
  paymentId: string
  provider: Provider
  redirectUrl: string
  expiresAt: Date
}

/** A pending payment of the signed-in `user` (their email goes to the gateway's page) and its gateway page. */
export async function createCheckout(
  deps: PaymentDeps,
  ctx: RequestContext,
  user: { id: string; email: string },
  input: { product: Product; resultId?: string; returnUrl: string },
): Promise<Checkout> {
  const gateway = deps.gateways.active
  if (!gateway) throw new AppError(503, 'SERVICE_UNAVAILABLE', 'Payments are not configured')
  const product = PRODUCT_TABLE[input.product]
  if (input.product === 'deep_insights') {
    await assertResultOwned(deps.db, user.id, input.resultId!)
    // Paying for a result that is already unlocked would buy nothing.
    if (await isResultUnlocked(deps.db, input.resultId!)) throw conflict('Deep insights of this result are already unlocked')
  }
  const now = deps.clock.now()
  if (product.plan === 'premium') {
    const current = await findUserPlan(deps.db, user.id)
    if (current && effectivePlan({ plan: current.plan, planExpiresAt: current.plan_expires_at }, now) === 'premium_plus') {
      throw conflict('Premium Plus is active; buy premium_plus_month to extend it')
    }
  }

  const id = newId()
  const expiresAt = new Date(now.getTime() + CHECKOUT_TTL_MINUTES * 60_000)
  await insertPayment(deps.db, {
    id,
    userId: user.id,
    product: input.product,
    amount: product.amount,
    currency: product.currency,
    provider: gateway.provider,
    resultId: input.resultId ?? null,
    returnUrl: input.returnUrl,
    now,
    expiresAt,
  })
  const urls = returnUrls(input.returnUrl, deps.webOrigin, id)
  let session: CheckoutSession
  try {
    session = await askGateway(ctx.log, gateway.provider, () =>
      gateway.createCheckout({
        paymentId: id,
        product: input.product,
        productName: product.name,
        amount: product.amount,
        currency: product.currency,
        successUrl: urls.success,
        cancelUrl: urls.cancel,
        expiresAt,
        customerEmail: user.email,
      }),
    )
  } catch (err) {
    // No checkout exists at the gateway: the record must not stay pending forever.
    await compareAndSetStatus(deps.db, id, 'pending', 'failed', deps.clock.now())
    throw err
  }
  await setProviderRef(deps.db, id, session.providerRef, deps.clock.now())
  return { paymentId: id, provider: gateway.provider, redirectUrl: session.redirectUrl, expiresAt }
}

export interface PaymentStatusView {
  paymentId: string
  status: PaymentStatus
  product: string
  grantedAt: Date | null
}

const statusView = (p: PaymentRow): PaymentStatusView => ({
  paymentId: p.id,
  status: p.status,
  product: p.product,
  grantedAt: p.granted_at,
})

/** Logs why a gateway call failed (the client only sees a generic 502) and rethrows. */
async function askGateway<T>(log: FastifyBaseLogger, provider: Provider, call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (err) {
    if (err instanceof AppError && err.status === 502) {
      const cause = err.cause instanceof Error ? err.cause.message : undefined
      log.warn({ provider, cause }, 'payment gateway call failed')
    }
    throw err
  }
}

/** Asks the gateway about a payment of the signed-in user and applies what it says. */
export async function verifyPayment(deps: PaymentDeps, ctx: RequestContext, paymentId: string): Promise<PaymentStatusView> {
  const payment = await findUserPayment(deps.db, signedIn(ctx), paymentId)
  if (!payment) throw notFound('Payment')
  const gateway = deps.gateways.byProvider.get(payment.provider)
  // Refunded is final; a gateway no longer configured cannot be asked.
  if (payment.status === 'refunded' || !gateway) return statusView(payment)
  const state = await askGateway(ctx.log, payment.provider, () =>
    gateway.fetchStatus({
      id: payment.id,
      providerRef: payment.provider_ref,
      amount: payment.amount,
      expiresAt: payment.expires_at,
    }),
  )
  const updated = await deps.db
    .transaction()
    .execute((trx) => applyGatewayState(trx, ctx, 'verify', payment.id, state, deps.clock.now()))
  return statusView(updated ?? payment)
}

/** 200 for every verified notification (duplicates, unknown payments and ignored event types included). */
export async function processWebhook(
  deps: PaymentDeps,
  ctx: RequestContext,
  provider: Provider,
  rawBody: Buffer,
  headers: Record<string, string | string[] | undefined>,
): Promise<void> {
  const gateway = deps.gateways.byProvider.get(provider)
  if (!gateway) throw notFound('Payment provider')
  const log = ctx.log
  // The gateway acts here, not whoever's session cookie came along with the request.
  const gatewayCtx: RequestContext = { ...ctx, actorId: null, sessionId: null }
  const notice: WebhookNotice = await askGateway(log, provider, () => gateway.parseWebhook(rawBody, headers))
  const payment = notice.paymentId ? await findPayment(deps.db, notice.paymentId) : undefined
  const known = payment && payment.provider === provider ? payment : undefined
  // The notice only says "look at this payment"; what happened is asked of the gateway itself.
  const state = known
    ? await askGateway(log, provider, () =>
        gateway.fetchStatus({ id: known.id, providerRef: known.provider_ref, amount: known.amount, expiresAt: known.expires_at }),
      )
    : undefined

  await deps.db.transaction().execute(async (trx) => {
    const fresh = await recordWebhookEvent(trx, {
      id: newId(),
      provider,
      eventKey: notice.eventKey,
      eventType: notice.eventType,
      paymentId: known?.id ?? null,
    })
    if (!fresh) {
      log.info({ provider, eventKey: notice.eventKey }, 'duplicate webhook ignored')
      return
    }
    if (!known || !state) {
      log.warn(
        { provider, eventType: notice.eventType, paymentId: notice.paymentId },
        'webhook for no payment of ours: acknowledged, ignored',
      )
      return
    }
    await applyGatewayState(trx, gatewayCtx, 'webhook', known.id, state, deps.clock.now())
  })
}

export async function listPayments(deps: PaymentDeps, ctx: RequestContext, page: PageRequest): Promise<Page<PaymentView>> {
  const rows = await listUserPayments(deps.db, signedIn(ctx), page)
  return toPage(rows, page.limit, toPaymentView, byCreatedAt)
}

/** The data the sandbox's confirm page needs, for a payment still open. */
export async function sandboxCheckout(deps: PaymentDeps, _ctx: RequestContext, paymentId: string) {
  const gateway = deps.gateways.byProvider.get('sandbox')
  const payment = await findPayment(deps.db, paymentId)
  if (!(gateway instanceof SandboxGateway) || !payment || payment.provider !== 'sandbox') throw notFound('Payment')
  if (payment.status !== 'pending' || payment.expires_at.getTime() <= deps.clock.now().getTime()) throw notFound('Open payment')
  const urls = returnUrls(payment.return_url, deps.webOrigin, payment.id)
  return {
    productName: PRODUCT_TABLE[payment.product as Product]?.name ?? payment.product,
    amount: payment.amount,
    pay: gateway.signedEvent(payment.id, 'paid', payment.amount, payment.currency),
    cancel: gateway.signedEvent(payment.id, 'failed', payment.amount, payment.currency),
    successUrl: urls.success,
    cancelUrl: urls.cancel,
  }
}
