// The sandbox gateway (the default outside production) end to end, checkout validation, access
// rules and plan arithmetic. The confirm page's signed events are posted as its buttons post them.
import t from 'tap'
import { buildTestApp, call, signUp, signUpWithRole, TEST_SECRET, type TestUser } from '../helpers/app.js'
import {
  auditActions,
  createResult,
  deepInsightsCheckout,
  paymentRow,
  postCheckout,
  postWebhook,
  startCheckout,
  userPlan,
  verify,
} from '../helpers/gateways.js'
import { sandboxKey, signSandbox } from '../../src/payment/sandbox.js'
import { auditEvents } from '../helpers/expect.js'

let now = new Date()
const app = await buildTestApp({ deps: { clock: { now: () => now } } })
const DAY = 86_400_000

interface PageData {
  webhookUrl: string
  header: string
  pay: { body: string; signature: string; returnUrl: string }
  cancel: { body: string; signature: string; returnUrl: string }
}

async function openPage(paymentId: string): Promise<PageData> {
  const res = await app.inject({ method: 'GET', url: `/api/v1/payments/sandbox/${paymentId}` })
  if (res.statusCode !== 200) throw new Error(`sandbox page: ${res.statusCode} ${res.body}`)
  const json = /<script type="application\/json" id="data">(.*?)<\/script>/s.exec(res.body)![1]!
  return JSON.parse(json)
}

async function press(paymentId: string, button: 'pay' | 'cancel') {
  const page = await openPage(paymentId)
  const res = await postWebhook(app, 'sandbox', page[button].body, { [page.header]: page[button].signature })
  if (res.statusCode !== 200) throw new Error(`webhook: ${res.statusCode} ${res.body}`)
  return page[button].returnUrl
}

async function buy(user: TestUser, product: string, resultId?: string) {
  const checkout = await startCheckout(app, user, { product, ...(resultId ? { resultId } : {}) })
  await press(checkout.paymentId, 'pay')
  return checkout.paymentId
}

t.test('the sandbox is the gateway by default outside production; each product end to end', async (t) => {
  const { user, resultId, checkout } = await deepInsightsCheckout(app, () => 'http://localhost:3000/r?x=1')
  t.equal(checkout.provider, 'sandbox')
  t.equal(checkout.redirectUrl, `http://localhost:8787/api/v1/payments/sandbox/${checkout.paymentId}`)
  t.equal(new Date(checkout.expiresAt).getTime(), now.getTime() + 60 * 60_000)

  const page = await app.inject({ method: 'GET', url: `/api/v1/payments/sandbox/${checkout.paymentId}` })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /^text\/html/)
  t.match(page.headers['content-security-policy'], /script-src 'nonce-/)
  t.match(page.body, /Rp 49\.000/)
  t.match(page.body, /<button id="pay"/)
  t.match(page.body, /<button id="cancel"/)

  const returnUrl = await press(checkout.paymentId, 'pay')
  t.equal(returnUrl, `http://localhost:3000/r?x=1&paymentId=${checkout.paymentId}`)
  t.equal((await verify(app, user, checkout.paymentId)).json().status, 'paid')
  const result = await call(app, 'GET', `/api/v1/compatibility/results/${resultId}`, { cookie: user.cookie })
  t.equal(result.json().deepInsightsUnlocked, true)

  await buy(user, 'premium_month')
  t.equal((await userPlan(app, user.id)).plan, 'premium')
  await buy(user, 'premium_plus_month')
  const plan = await userPlan(app, user.id)
  t.equal(plan.plan, 'premium_plus')
  t.equal(plan.plan_expires_at!.getTime(), now.getTime() + 30 * DAY, 'an upgrade starts 30 days from now')

  const gone = await app.inject({ method: 'GET', url: `/api/v1/payments/sandbox/${checkout.paymentId}` })
  t.equal(gone.statusCode, 404, 'the page of a settled payment is gone')
})

t.test('cancel marks the payment failed and grants nothing', async (t) => {
  const user = await signUp(app)
  const checkout = await startCheckout(app, user, { product: 'premium_month' })
  const returnUrl = await press(checkout.paymentId, 'cancel')
  t.match(returnUrl, /status=cancelled/)
  t.equal((await verify(app, user, checkout.paymentId)).json().status, 'failed')
  t.equal((await userPlan(app, user.id)).plan, 'free')
})

t.test('premium extends from the later of now and the current expiry', async (t) => {
  const user = await signUp(app)
  const later = new Date(now.getTime() + 10 * DAY)
  await app.db.updateTable('user').set({ plan: 'premium', plan_expires_at: later }).where('id', '=', user.id).execute()
  await buy(user, 'premium_month')
  t.equal((await userPlan(app, user.id)).plan_expires_at!.getTime(), later.getTime() + 30 * DAY)

  const lapsed = await signUp(app)
  await app.db
    .updateTable('user')
    .set({ plan: 'premium', plan_expires_at: new Date(now.getTime() - 5 * DAY) })
    .where('id', '=', lapsed.id)
    .execute()
  await buy(lapsed, 'premium_month')
  t.equal(
    (await userPlan(app, lapsed.id)).plan_expires_at!.getTime(),
    now.getTime() + 30 * DAY,
    'a lapsed plan restarts from now',
  )
})

t.test('grants stack in the order they took the lock, whatever time their transactions began with', async (t) => {
  async function refund(paymentId: string) {
    const body = JSON.stringify({ id: `evt_refund_${paymentId}`, paymentId, status: 'refunded', amount: 79_000, currency: 'IDR' })
    const signature = signSandbox(sandboxKey(TEST_SECRET), body, now)
    const res = await postWebhook(app, 'sandbox', body, { 'x-sandbox-signature': signature })
    if (res.statusCode !== 200) throw new Error(`webhook: ${res.statusCode} ${res.body}`)
  }
  const daysLeft = async (userId: string) => {
    const plan = await userPlan(app, userId)
    return plan.plan === 'free' ? 0 : (plan.plan_expires_at!.getTime() - now.getTime()) / DAY
  }
  for (const first of ['the grant that waited', 'the other'] as const) {
    const user = await signUp(app)
    const a = await startCheckout(app, user, { product: 'premium_month' })
    const b = await startCheckout(app, user, { product: 'premium_month' })
    const start = now
    now = new Date(start.getTime() + 5)
    await press(a.paymentId, 'pay') // A's transaction began later but took the user's lock first
    now = start
    await press(b.paymentId, 'pay') // B's began earlier and waited: its 30 days go on top of A's
    now = new Date(start.getTime() + 10)
    t.ok((await daysLeft(user.id)) > 59, `${first}: 60 days bought`)
    const [one, two] = first === 'the grant that waited' ? [b, a] : [a, b]
    await refund(one.paymentId)
    const left = await daysLeft(user.id)
    t.ok(left > 29 && left <= 30, `${first}: 30 days left after one refund (${left.toFixed(4)})`)
    await refund(two.paymentId)
    t.equal((await userPlan(app, user.id)).plan, 'free', `${first}: nothing left after both`)
  }
})

t.test('premium while premium_plus is active: checkout refuses; a raced payment grants nothing and is flagged', async (t) => {
  const user = await signUp(app)
  const checkout = await startCheckout(app, user, { product: 'premium_month' })
  const plusUntil = new Date(now.getTime() + 5 * DAY)
  await app.db.updateTable('user').set({ plan: 'premium_plus', plan_expires_at: plusUntil }).where('id', '=', user.id).execute()
  const refused = await postCheckout(app, user, { product: 'premium_month', returnUrl: '/x' })
  t.equal(refused.statusCode, 409)
  t.match(refused.json(), { code: 'CONFLICT' })

  await press(checkout.paymentId, 'pay')
  const row = await paymentRow(app, checkout.paymentId)
  t.equal(row.status, 'paid')
  t.equal(row.granted_at, null)
  const plan = await userPlan(app, user.id)
  t.equal(plan.plan, 'premium_plus')
  t.equal(plan.plan_expires_at!.getTime(), plusUntil.getTime())
  t.same(await auditActions(app, checkout.paymentId), ['payment.grant_skipped', 'payment.paid'])
})

t.test('two payments for one result: the second is paid but grants nothing (409 from the unlock) and is flagged', async (t) => {
  const user = await signUp(app)
  const resultId = await createResult(app, user)
  const first = await startCheckout(app, user, { product: 'deep_insights', resultId })
  const second = await startCheckout(app, user, { product: 'deep_insights', resultId })
  await press(first.paymentId, 'pay')
  await press(second.paymentId, 'pay')
  t.ok((await paymentRow(app, first.paymentId)).granted_at)
  const row = await paymentRow(app, second.paymentId)
  t.equal(row.status, 'paid', 'the money moved, so the record says so')
  t.equal(row.granted_at, null)
  t.same(await auditActions(app, second.paymentId), ['payment.grant_skipped', 'payment.paid'])
  const audit = (await auditEvents(app.db, { action: 'payment.grant_skipped', targetId: second.paymentId }))[0]!
  t.match(audit.details, { reason: 'conflict' })
  const result = await call(app, 'GET', `/api/v1/compatibility/results/${resultId}`, { cookie: user.cookie })
  t.equal(result.json().paymentId, first.paymentId)
})

t.test('the webhook wants a JSON body', async (t) => {
  t.equal((await postWebhook(app, 'sandbox', 'x', { 'content-type': 'text/plain' })).statusCode, 415)
  t.equal((await postWebhook(app, 'sandbox', '')).statusCode, 400)
  const big = await postWebhook(app, 'sandbox', JSON.stringify({ pad: 'x'.repeat(600 * 1024) }))
  t.equal(big.statusCode, 413)
})

t.test('checkout validation', async (t) => {
  const user = await signUp(app)
  const other = await signUp(app)
  const othersResult = await createResult(app, other)
  const resultId = await createResult(app, user)
  const post = (body: unknown) => postCheckout(app, user, body)

  for (const [name, body] of [
    ['unknown product', { product: 'lifetime', returnUrl: '/x' }],
    ['missing resultId', { product: 'deep_insights', returnUrl: '/x' }],
    ['resultId on a plan', { product: 'premium_month', resultId, returnUrl: '/x' }],
    ['missing returnUrl', { product: 'premium_month' }],
    ['unknown key', { product: 'premium_month', returnUrl: '/x', amount: 1 }],
    ['mass-assigned status', { product: 'premium_month', returnUrl: '/x', status: 'paid' }],
    ['oversized returnUrl', { product: 'premium_month', returnUrl: `/${'a'.repeat(3000)}` }],
  ] as const) {
    const res = await post(body)
    t.equal(res.statusCode, 400, name)
    t.equal(res.json().code, 'VALIDATION_ERROR', name)
  }
  const foreign = await post({ product: 'deep_insights', resultId: othersResult, returnUrl: '/x' })
  t.equal(foreign.statusCode, 404, "someone else's result")
  t.equal((await post({ product: 'deep_insights', resultId: 'nope', returnUrl: '/x' })).statusCode, 404)
  for (const returnUrl of ['https://evil.example/x', '//evil.example/x', 'javascript:alert(1)', '/\\evil.example']) {
    const res = await post({ product: 'premium_month', returnUrl })
    t.equal(res.statusCode, 403, returnUrl)
    t.equal(res.json().code, 'INVALID_CALLBACK_URL', returnUrl)
  }
  const rows = await app.db.selectFrom('payment').select('id').where('user_id', '=', user.id).execute()
  t.equal(rows.length, 0, 'nothing written by a refused checkout')

  await buy(user, 'deep_insights', resultId)
  const again = await post({ product: 'deep_insights', resultId, returnUrl: '/x' })
  t.equal(again.statusCode, 409, 'an unlocked result cannot be bought again')
})

t.test('routes need a session (401) and the trusted origin', async (t) => {
  for (const [method, url] of [
    ['POST', '/api/v1/payments/checkout'],
    ['POST', '/api/v1/payments/x/verify'],
    ['GET', '/api/v1/payments'],
  ] as const) {
    const res = await call(app, method, url, method === 'POST' ? { body: { product: 'premium_month', returnUrl: '/x' } } : {})
    // Refused before the body is read, so even verify's unknown keys cannot turn the 401 into a 400.
    t.equal(res.statusCode, 401, `${method} ${url}`)
  }
  t.equal((await call(app, 'POST', '/api/v1/payments/x/verify', { body: {} })).statusCode, 401)
  const user = await signUp(app)
  const evil = await app.inject({
    method: 'POST',
    url: '/api/v1/payments/checkout',
    headers: { origin: 'https://evil.example', cookie: user.cookie },
    payload: { product: 'premium_month', returnUrl: '/x' },
  })
  t.equal(evil.statusCode, 403)
})

t.test("a member cannot verify or see another member's payment", async (t) => {
  const owner = await signUp(app)
  const other = await signUp(app)
  const checkout = await startCheckout(app, owner, { product: 'premium_month' })
  const res = await verify(app, other, checkout.paymentId)
  t.equal(res.statusCode, 404)
  t.equal(res.json().code, 'NOT_FOUND')
  const admin = await signUpWithRole(app, 'admin')
  t.equal((await verify(app, admin, checkout.paymentId)).statusCode, 404, 'not even an admin verifies for someone else')
  t.same((await call(app, 'GET', '/api/v1/payments', { cookie: other.cookie })).json().items, [])
  t.equal((await verify(app, owner, checkout.paymentId)).statusCode, 200)
})

t.test('listPayments pages newest first with a cursor', async (t) => {
  const user = await signUp(app)
  const ids: string[] = []
  for (let i = 0; i < 5; i++) {
    now = new Date(now.getTime() + 1000)
    ids.push((await startCheckout(app, user, { product: 'premium_month' })).paymentId)
  }
  const first = await call(app, 'GET', '/api/v1/payments?limit=2', { cookie: user.cookie })
  t.equal(first.statusCode, 200)
  t.same(
    first.json().items.map((p: { id: string }) => p.id),
    [ids[4], ids[3]],
  )
  t.match(first.json().items[0], {
    product: 'premium_month',
    amount: 79_000,
    currency: 'IDR',
    status: 'pending',
    provider: 'sandbox',
    resultId: null,
    grantedAt: null,
  })
  const second = await call(app, 'GET', `/api/v1/payments?limit=2&cursor=${first.json().nextCursor}`, { cookie: user.cookie })
  const third = await call(app, 'GET', `/api/v1/payments?limit=2&cursor=${second.json().nextCursor}`, { cookie: user.cookie })
  t.same(
    [...second.json().items, ...third.json().items].map((p: { id: string }) => p.id),
    [ids[2], ids[1], ids[0]],
  )
  t.equal(third.json().nextCursor, null)
  for (const q of ['limit=0', 'limit=101', 'cursor=garbage', 'foo=1']) {
    t.equal((await call(app, 'GET', `/api/v1/payments?${q}`, { cookie: user.cookie })).statusCode, 400, q)
  }
})

t.test('sandbox webhook: bad, stale or re-serialised signatures are 400 and change nothing', async (t) => {
  const user = await signUp(app)
  const checkout = await startCheckout(app, user, { product: 'premium_month' })
  const page = await openPage(checkout.paymentId)
  const key = sandboxKey(TEST_SECRET)
  const body = page.pay.body
  const staleAt = new Date(now.getTime() - 2 * 60 * 60_000)
  for (const [name, payload, signature] of [
    ['wrong key', body, signSandbox(sandboxKey('another-secret-that-is-long-enough-000'), body, now)],
    ['stale', body, signSandbox(key, body, staleAt)],
    ['re-serialised', JSON.stringify(JSON.parse(body), null, 1), page.pay.signature],
    ['tampered amount', body.replace('79000', '1'), page.pay.signature],
    ['missing', body, ''],
  ] as const) {
    const res = await postWebhook(app, 'sandbox', payload, signature ? { 'x-sandbox-signature': signature } : {})
    t.equal(res.statusCode, 400, name)
    t.match(res.json(), { code: 'BAD_REQUEST', status: 400 }, name)
  }
  t.equal((await verify(app, user, checkout.paymentId)).json().status, 'pending')
  t.equal((await userPlan(app, user.id)).plan, 'free')
})

t.test('a sandbox event signed for the wrong amount is refused and audited', async (t) => {
  const user = await signUp(app)
  const checkout = await startCheckout(app, user, { product: 'premium_month' })
  const body = JSON.stringify({ id: 'evt_cheap', paymentId: checkout.paymentId, status: 'paid', amount: 1000, currency: 'IDR' })
  const res = await postWebhook(app, 'sandbox', body, { 'x-sandbox-signature': signSandbox(sandboxKey(TEST_SECRET), body, now) })
  t.equal(res.statusCode, 200)
  t.equal((await paymentRow(app, checkout.paymentId)).status, 'pending')
  t.same(await auditActions(app, checkout.paymentId), ['payment.amount_mismatch'])
})

t.test('a pending checkout past its expiry verifies as expired; unknown provider and page are 404', async (t) => {
  const user = await signUp(app)
  const checkout = await startCheckout(app, user, { product: 'premium_month' })
  now = new Date(now.getTime() + 61 * 60_000)
  t.equal((await app.inject({ method: 'GET', url: `/api/v1/payments/sandbox/${checkout.paymentId}` })).statusCode, 404)
  t.equal((await verify(app, user, checkout.paymentId)).json().status, 'expired')
  t.equal((await postWebhook(app, 'paypal', '{}')).statusCode, 400, 'unknown provider is a validation error')
  t.equal((await postWebhook(app, 'stripe', '{}')).statusCode, 404, 'a gateway that is not configured')
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/payments/sandbox/nope' })).statusCode, 404)
})

t.test('the payment outlives its account, anonymised', async (t) => {
  const user = await signUp(app)
  const paymentId = await buy(user, 'premium_month')
  await app.db.deleteFrom('user').where('id', '=', user.id).execute()
  const row = await paymentRow(app, paymentId)
  t.equal(row.user_id, null)
  t.equal(row.status, 'paid')
})

t.test('production without a gateway: checkout is 503 and there is no sandbox page', async (t) => {
  const prod = await buildTestApp({ env: { NODE_ENV: 'production' } })
  const user = await signUp(prod)
  const res = await postCheckout(prod, user, { product: 'premium_month', returnUrl: '/x' })
  t.equal(res.statusCode, 503)
  t.match(res.json(), { code: 'SERVICE_UNAVAILABLE' })
  const body = JSON.stringify({ id: 'evt_x', paymentId: 'p', status: 'paid', amount: 1, currency: 'IDR' })
  const hook = await postWebhook(prod, 'sandbox', body, {
    'x-sandbox-signature': signSandbox(sandboxKey(TEST_SECRET), body, new Date()),
  })
  t.equal(hook.statusCode, 404, 'the sandbox webhook does not exist in production')
  t.equal((await prod.inject({ method: 'GET', url: '/api/v1/payments/sandbox/p' })).statusCode, 404)
})
