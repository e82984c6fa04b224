// A simulated gateway inside the service (development only; config refuses it in production), so
// the whole purchase runs on a fresh machine. Its checkout page is ours: "Pay" and "Cancel" post a
// webhook signed with a key derived from AUTH_SECRET, exactly as a real gateway would call us.
import { createHmac, timingSafeEqual } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { z } from 'zod'
import type { Clock } from '../shared/clock.js'
import { escapeHtml, htmlPage, pageData, type Page } from '../shared/html-page.js'
import { newId } from '../shared/ids.js'
import type { CheckoutRequest, CheckoutSession, GatewayState, PaymentGateway, PaymentRef, WebhookNotice } from './gateway.js'
import { badSignature, header, notYetAtGateway } from './gateway.js'
import { CHECKOUT_TTL_MINUTES } from './products.js'
import type { PaymentStatus } from './tables.js'

const SANDBOX_SIGNATURE_HEADER = 'x-sandbox-signature'
const SANDBOX_WEBHOOK_PATH = '/api/v1/payments/webhook/sandbox'
const sandboxPagePath = (paymentId: string) => `/api/v1/payments/sandbox/${encodeURIComponent(paymentId)}`

// The page's signatures stay valid as long as the checkout is open, not Stripe's 5 minutes.
const TOLERANCE_SECONDS = CHECKOUT_TTL_MINUTES * 60

const SandboxEvent = z.strictObject({
  id: z.string().min(1).max(100),
  paymentId: z.string().min(1).max(200),
  status: z.enum(['paid', 'failed', 'expired', 'refunded']),
  amount: z.number().int().nonnegative(),
  currency: z.string().min(3).max(3),
})
type SandboxEvent = z.infer<typeof SandboxEvent>

/** A key of its own, so a sandbox signature can never double as a session cookie signature. */
export function sandboxKey(authSecret: string): Buffer {
  return createHmac('sha256', authSecret).update('payment-sandbox-webhook-v1').digest()
}

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`, Stripe's scheme. */
export function signSandbox(key: Buffer, body: string, at: Date): string {
  const t = Math.floor(at.getTime() / 1000)
  const v1 = createHmac('sha256', key).update(`${t}.${body}`).digest('hex')
  return `t=${t},v1=${v1}`
}

export class SandboxGateway implements PaymentGateway {
  readonly provider = 'sandbox' as const
  private readonly key: Buffer
  /** The simulated gateway's own ledger: per process, forgotten on restart (development only). */
  private readonly ledger = new Map<string, GatewayState>()

  constructor(
    authSecret: string,
    private readonly baseUrl: string,
    private readonly clock: Clock,
  ) {
    this.key = sandboxKey(authSecret)
  }

  async createCheckout(request: CheckoutRequest): Promise<CheckoutSession> {
    return { providerRef: request.paymentId, redirectUrl: `${this.baseUrl}${sandboxPagePath(request.paymentId)}` }
  }

  async fetchStatus(payment: PaymentRef): Promise<GatewayState> {
    const known = this.ledger.get(payment.id)
    return known ?? notYetAtGateway(payment, this.clock.now())
  }

  async parseWebhook(rawBody: Buffer, headers: IncomingHttpHeaders): Promise<WebhookNotice> {
    const signature = header(headers, SANDBOX_SIGNATURE_HEADER)
    const match = signature ? /^t=(\d{1,12}),v1=([0-9a-f]{64})$/.exec(signature) : null
    if (!match) throw badSignature('Sandbox signature header is missing or malformed')
    const t = Number(match[1])
    const now = Math.floor(this.clock.now().getTime() / 1000)
    if (Math.abs(now - t) > TOLERANCE_SECONDS) throw badSignature('Webhook signature is stale')
    const expected = createHmac('sha256', this.key).update(`${t}.`).update(rawBody).digest()
    if (!timingSafeEqual(Buffer.from(match[2]!, 'hex'), expected)) throw badSignature()

    let event: SandboxEvent
    try {
      event = SandboxEvent.parse(JSON.parse(rawBody.toString('utf8')))
    } catch {
      throw badSignature('Sandbox event is malformed')
    }
    // Like a real gateway, money that moved stays moved: later events cannot undo "paid" except a refund.
    const previous = this.ledger.get(event.paymentId)?.status
    if (previous !== 'paid' || event.status === 'refunded') {
      this.ledger.set(event.paymentId, { status: event.status, amount: event.amount, currency: event.currency })
    }
    return { eventKey: event.id, eventType: `payment.${event.status}`, paymentId: event.paymentId }
  }

  /** A signed event as the confirm page posts it. */
  signedEvent(paymentId: string, status: PaymentStatus, amount: number, currency: string): { body: string; signature: string } {
    const body = JSON.stringify({ id: `evt_${newId()}`, paymentId, status, amount, currency })
    return { body, signature: signSandbox(this.key, body, this.clock.now()) }
  }
}

const SANDBOX_CSS = `.note { background: #fff4cc; padding: .5rem .75rem; border-radius: .25rem; font-size: .9rem; }
button { margin-right: .5rem; }
#pay { background: #1a7f37; color: #fff; }`

interface SandboxPageInput {
  productName: string
  amount: number
  pay: { body: string; signature: string }
  cancel: { body: string; signature: string }
  successUrl: string
  cancelUrl: string
}

/** The confirm page and its Content-Security-Policy (inline code only with this page's nonce). */
export function renderSandboxPage(input: SandboxPageInput): Page {
  const data = pageData({
    webhookUrl: SANDBOX_WEBHOOK_PATH,
    header: SANDBOX_SIGNATURE_HEADER,
    pay: { ...input.pay, returnUrl: input.successUrl },
    cancel: { ...input.cancel, returnUrl: input.cancelUrl },
  })
  const amount = `Rp ${input.amount.toLocaleString('id-ID')}`
  return htmlPage(
    'Sandbox payment',
    (nonce) => `<p class="note">Sandbox gateway: no real money moves.</p>
<h1>Confirm payment</h1>
<p id="product">${escapeHtml(input.productName)}</p>
<p id="amount"><strong>${escapeHtml(amount)}</strong></p>
<p><button id="pay" type="button">Pay</button><button id="cancel" type="button">Cancel</button></p>
<p id="message" role="status"></p>
<script type="application/json" id="data">${data}</script>
<script nonce="${nonce}">
const data = JSON.parse(document.getElementById('data').textContent)
async function send(which) {
  for (const b of document.querySelectorAll('button')) b.disabled = true
  const event = data[which]
  const res = await fetch(data.webhookUrl, { method: 'POST', headers: { 'content-type': 'application/json', [data.header]: event.signature }, body: event.body })
  if (!res.ok) { document.getElementById('message').textContent = 'The payment could not be sent.'; return }
  location.href = event.returnUrl
}
document.getElementById('pay').addEventListener('click', () => send('pay'))
document.getElementById('cancel').addEventListener('click', () => send('cancel'))
</script>`,
    SANDBOX_CSS,
  )
}
