// Purchases through the Stripe adapter: the real `stripe` SDK against a local server that answers
// like Stripe's API, webhooks signed as Stripe signs them.
import t from 'tap'
import { buildTestApp, signUp, call } from '../helpers/app.js'
import {
  auditActions,
  createResult,
  deepInsightsCheckout,
  FakeStripe,
  paymentRow,
  postCheckout,
  postWebhook,
  purchasesOf,
  startCheckout,
  userPlan,
  verify,
} from '../helpers/gateways.js'

const stripe = await new FakeStripe().start()
const logs: string[] = []
const app = await buildTestApp({
  env: {
    PAYMENT_GATEWAY: 'stripe',
    STRIPE_SECRET_KEY: stripe.secretKey,
    STRIPE_WEBHOOK_SECRET: stripe.webhookSecret,
    STRIPE_API_BASE: stripe.url,
    LOG_LEVEL: 'warn',
  },
  deps: { logStream: { write: (line: string) => void logs.push(line) } },
})
const DAY = 24 * 60 * 60 * 1000

const completed = (paymentId: string) => stripe.event('checkout.session.completed', stripe.sessionFor(paymentId))
const deliver = (e: { payload: string; signature: string }) =>
  postWebhook(app, 'stripe', e.payload, { 'stripe-signature': e.signature })

t.test('deep insights bought end to end: checkout, pay, webhook, result unlocked', async (t) => {
  const { user, resultId, checkout } = await deepInsightsCheckout(app, () => 'http://localhost:3000/results')
  t.equal(checkout.provider, 'stripe')
  t.match(checkout.redirectUrl, /^https:\/\/checkout\.stripe\.test\/c\/pay\/cs_test_/)

  const created = stripe.createCalls.at(-1)!
  t.equal(created.idempotencyKey, `checkout-${checkout.paymentId}`, 'idempotency key is our payment id')
  t.equal(created.form.get('mode'), 'payment')
  t.equal(created.form.get('line_items[0][price_data][currency]'), 'idr')
  t.equal(created.form.get('line_items[0][price_data][unit_amount]'), String(49_000 * 100), 'IDR sent in sen')
  t.equal(created.form.get('client_reference_id'), checkout.paymentId)
  t.equal(created.form.get('metadata[paymentId]'), checkout.paymentId)
  t.equal(created.form.get('success_url'), `http://localhost:3000/results?paymentId=${checkout.paymentId}`)

  stripe.pay(checkout.paymentId)
  const res = await deliver(completed(checkout.paymentId))
  t.equal(res.statusCode, 200)
  t.same(res.json(), { received: true })

  const row = await paymentRow(app, checkout.paymentId)
  t.equal(row.status, 'paid')
  t.ok(row.granted_at)
  const result = await call(app, 'GET', `/api/v1/compatibility/results/${resultId}`, { cookie: user.cookie })
  t.equal(result.json().deepInsightsUnlocked, true)
  t.equal(result.json().paymentId, checkout.paymentId)
  const v = await verify(app, user, checkout.paymentId)
  t.equal(v.statusCode, 200)
  t.match(v.json(), { paymentId: checkout.paymentId, status: 'paid', product: 'deep_insights', grantedAt: String })
})

t.test('premium_month bought end to end sets the plan for 30 days', async (t) => {
  const user = await signUp(app)
  const checkout = await startCheckout(app, user, { product: 'premium_month' })
  t.equal(stripe.createCalls.at(-1)!.form.get('line_items[0][price_data][unit_amount]'), String(79_000 * 100))
  stripe.pay(checkout.paymentId)
  t.equal((await deliver(completed(checkout.paymentId))).statusCode, 200)
  const plan = await userPlan(app, user.id)
  t.equal(plan.plan, 'premium')
  const days = (plan.plan_expires_at!.getTime() - Date.now()) / DAY
  t.ok(days > 29.9 && days <= 30, `expires in 30 days (${days})`)
})

t.test('premium_plus_month bought end to end; a second one extends from the current expiry', async (t) => {
  const user = await signUp(app)
  const first = await startCheckout(app, user, { product: 'premium_plus_month' })
  t.equal(stripe.createCalls.at(-1)!.form.get('line_items[0][price_data][unit_amount]'), String(149_000 * 100))
  stripe.pay(first.paymentId)
  await deliver(completed(first.paymentId))
  const afterFirst = await userPlan(app, user.id)
  t.equal(afterFirst.plan, 'premium_plus')

  const second = await startCheckout(app, user, { product: 'premium_plus_month' })
  stripe.pay(second.paymentId)
  t.equal((await verify(app, user, second.paymentId)).json().status, 'paid', 'verify alone completes it')
  const afterSecond = await userPlan(app, user.id)
  t.equal(
    afterSecond.plan_expires_at!.getTime() - afterFirst.plan_expires_at!.getTime(),
    30 * DAY,
    '30 more days from the old expiry',
  )
})

t.test('the same webhook delivered twice in sequence grants once', async (t) => {
  const user = await signUp(app)
  const checkout = await startCheckout(app, user, { product: 'premium_month' })
  stripe.pay(checkout.paymentId)
  const event = completed(checkout.paymentId)
  t.equal((await deliver(event)).statusCode, 200)
  const once = await userPlan(app, user.id)
  t.equal((await deliver(event)).statusCode, 200, 'a duplicate is acknowledged')
  const twice = await userPlan(app, user.id)
  t.same(twice.plan_expires_at, once.plan_expires_at, 'no second 30 days')
  t.same(
    (await auditActions(app, checkout.paymentId)).filter((a) => a === 'payment.paid'),
    ['payment.paid'],
  )
  const events = await app.db.selectFrom('webhook_event').selectAll().where('payment_id', '=', checkout.paymentId).execute()
  t.equal(events.length, 1)
})

t.test('the same webhook delivered ten times concurrently grants once', async (t) => {
  const user = await signUp(app)
  const checkout = await startCheckout(app, user, { product: 'premium_month' })
  stripe.pay(checkout.paymentId)
  const event = completed(checkout.paymentId)
  const results = await Promise.all(Array.from({ length: 10 }, () => deliver(event)))
  t.same(
    results.map((r) => r.statusCode),
    Array(10).fill(200),
  )
  const plan = await userPlan(app, user.id)
  const days = (plan.plan_expires_at!.getTime() - Date.now()) / DAY
  t.ok(days > 29.9 && days <= 30, `exactly 30 days granted (${days})`)
  t.equal((await auditActions(app, checkout.paymentId)).filter((a) => a === 'payment.paid').length, 1)
})

t.test('different events about one payment, webhook and verify racing: granted once', async (t) => {
  const { user, resultId, checkout } = await deepInsightsCheckout(app)
  stripe.pay(checkout.paymentId)
  const session = stripe.sessionFor(checkout.paymentId)
  const racers = [
    deliver(stripe.event('checkout.session.completed', session)),
    deliver(stripe.event('checkout.session.async_payment_succeeded', session)),
    verify(app, user, checkout.paymentId),
    verify(app, user, checkout.paymentId),
    deliver(stripe.event('checkout.session.completed', session)),
  ]
  const results = await Promise.all(racers)
  t.same(
    results.map((r) => r.statusCode),
    [200, 200, 200, 200, 200],
  )
  t.equal((await purchasesOf(app, resultId)).length, 1, 'one purchase')
  t.equal((await auditActions(app, checkout.paymentId)).filter((a) => a === 'payment.paid').length, 1)
})

t.test('a bad or stale signature is a 400 and changes nothing', async (t) => {
  const user = await signUp(app)
  const checkout = await startCheckout(app, user, { product: 'premium_month' })
  stripe.pay(checkout.paymentId)
  const session = stripe.sessionFor(checkout.paymentId)

  const wrongSecret = stripe.event('checkout.session.completed', session, { secret: 'whsec_attacker' })
  const stale = stripe.event('checkout.session.completed', session, { timestamp: Math.floor(Date.now() / 1000) - 3600 })
  const good = stripe.event('checkout.session.completed', session)
  for (const [name, res] of [
    ['wrong secret', await deliver(wrongSecret)],
    ['stale timestamp', await deliver(stale)],
    ['no signature', await postWebhook(app, 'stripe', good.payload)],
    ['garbage signature', await postWebhook(app, 'stripe', good.payload, { 'stripe-signature': 't=1,v1=abc' })],
  ] as const) {
    t.equal(res.statusCode, 400, name)
    t.match(res.json(), { code: 'BAD_REQUEST', status: 400 }, name)
  }
  t.equal((await paymentRow(app, checkout.paymentId)).status, 'pending')
  t.equal((await userPlan(app, user.id)).plan, 'free')
  const events = await app.db.selectFrom('webhook_event').selectAll().where('payment_id', '=', checkout.paymentId).execute()
  t.equal(events.length, 0, 'no event recorded')
})

t.test('a body re-serialised after signing fails verification', async (t) => {
  const user = await signUp(app)
  const checkout = await startCheckout(app, user, { product: 'premium_month' })
  stripe.pay(checkout.paymentId)
  const event = completed(checkout.paymentId)
  const reserialised = JSON.stringify(JSON.parse(event.payload))
  t.not(reserialised, event.payload)
  const res = await postWebhook(app, 'stripe', reserialised, { 'stripe-signature': event.signature })
  t.equal(res.statusCode, 400)
  t.equal((await paymentRow(app, checkout.paymentId)).status, 'pending')
})

t.test('paid after expired: a late capture still becomes paid (the money moved)', async (t) => {
  const user = await signUp(app)
  const checkout = await startCheckout(app, user, { product: 'premium_month' })
  stripe.expire(checkout.paymentId)
  await deliver(stripe.event('checkout.session.expired', stripe.sessionFor(checkout.paymentId)))
  t.equal((await paymentRow(app, checkout.paymentId)).status, 'expired')
  t.equal((await userPlan(app, user.id)).plan, 'free')

  stripe.pay(checkout.paymentId)
  await deliver(completed(checkout.paymentId))
  t.equal((await paymentRow(app, checkout.paymentId)).status, 'paid')
  t.equal((await userPlan(app, user.id)).plan, 'premium')
})

t.test('expired delivered after paid does not undo the payment', async (t) => {
  const user = await signUp(app)
  const checkout = await startCheckout(app, user, { product: 'premium_month' })
  stripe.pay(checkout.paymentId)
  const stalePaidSnapshot = { ...stripe.sessionFor(checkout.paymentId), status: 'expired' }
  await deliver(completed(checkout.paymentId))
  await deliver(stripe.event('checkout.session.expired', stalePaidSnapshot))
  t.equal((await paymentRow(app, checkout.paymentId)).status, 'paid')
  t.equal((await userPlan(app, user.id)).plan, 'premium')
})

t.test('refunded before paid: ends refunded, nothing granted', async (t) => {
  const { user, resultId, checkout } = await deepInsightsCheckout(app)
  stripe.pay(checkout.paymentId)
  const paidEvent = completed(checkout.paymentId) // captured, but delivered late
  const charge = stripe.refund(checkout.paymentId)
  const refundEvent = stripe.event('charge.refunded', charge)
  t.equal((await deliver(refundEvent)).statusCode, 200)
  t.equal((await deliver(paidEvent)).statusCode, 200)
  const row = await paymentRow(app, checkout.paymentId)
  t.equal(row.status, 'refunded')
  t.equal(row.granted_at, null)
  t.equal((await purchasesOf(app, resultId)).length, 0, 'no purchase was ever made')
  const result = await call(app, 'GET', `/api/v1/compatibility/results/${resultId}`, { cookie: user.cookie })
  t.equal(result.json().deepInsightsUnlocked, false)
  t.same(await auditActions(app, checkout.paymentId), ['payment.paid', 'payment.refunded'])
})

t.test('a refund after paid takes the grant back', async (t) => {
  const user = await signUp(app)
  const resultId = await createResult(app, user)
  const insights = await startCheckout(app, user, { product: 'deep_insights', resultId })
  const premium = await startCheckout(app, user, { product: 'premium_month' })
  for (const p of [insights, premium]) {
    stripe.pay(p.paymentId)
    await deliver(completed(p.paymentId))
  }
  t.equal((await userPlan(app, user.id)).plan, 'premium')
  for (const p of [insights, premium]) {
    t.equal((await deliver(stripe.event('charge.refunded', stripe.refund(p.paymentId)))).statusCode, 200)
    t.equal((await paymentRow(app, p.paymentId)).status, 'refunded')
  }
  const plan = await userPlan(app, user.id)
  t.equal(plan.plan, 'free', 'back on free: the refunded 30 days were all there was')
  t.equal(plan.plan_expires_at, null)
  const [purchase] = await purchasesOf(app, resultId)
  t.equal(purchase!.status, 'revoked')
  const result = await call(app, 'GET', `/api/v1/compatibility/results/${resultId}`, { cookie: user.cookie })
  t.equal(result.json().deepInsightsUnlocked, false)
})

t.test('an amount that does not match our record is refused, logged and audited', async (t) => {
  const user = await signUp(app)
  const checkout = await startCheckout(app, user, { product: 'premium_plus_month' })
  stripe.pay(checkout.paymentId, { amountTotal: 100 * 100 })
  const res = await deliver(completed(checkout.paymentId))
  t.equal(res.statusCode, 200, 'acknowledged: a retry would not change the amount')
  t.equal((await paymentRow(app, checkout.paymentId)).status, 'pending')
  t.equal((await userPlan(app, user.id)).plan, 'free')
  t.equal((await verify(app, user, checkout.paymentId)).json().status, 'pending')
  t.same(await auditActions(app, checkout.paymentId), ['payment.amount_mismatch', 'payment.amount_mismatch'])
  const logged = logs
    .map((l) => JSON.parse(l))
    .filter((l) => l.msg === 'payment amount mismatch: refused' && l.paymentId === checkout.paymentId)
  t.equal(logged.length, 2, 'each refusal is logged')
  t.match(logged[0], { level: 40, expected: { amount: 149_000, currency: 'IDR' }, gateway: { amount: 100, currency: 'IDR' } })

  const other = await startCheckout(app, user, { product: 'premium_month' })
  stripe.pay(other.paymentId, { currency: 'usd' })
  await deliver(completed(other.paymentId))
  t.equal((await paymentRow(app, other.paymentId)).status, 'pending', 'another currency is refused too')
})

t.test('events for no payment of ours and other event types are acknowledged and ignored', async (t) => {
  const foreign = stripe.event('checkout.session.completed', {
    id: 'cs_foreign',
    object: 'checkout.session',
    client_reference_id: 'not-ours',
  })
  t.equal((await deliver(foreign)).statusCode, 200)
  t.equal((await deliver(stripe.event('customer.created', { id: 'cus_1', object: 'customer' }))).statusCode, 200)
})

t.test('the gateway failing at checkout is a 502 and the payment is marked failed', async (t) => {
  const broken = await buildTestApp({
    env: {
      PAYMENT_GATEWAY: 'stripe',
      STRIPE_SECRET_KEY: 'sk_test_wrong',
      STRIPE_WEBHOOK_SECRET: stripe.webhookSecret,
      STRIPE_API_BASE: stripe.url,
    },
  })
  const user = await signUp(broken)
  const res = await postCheckout(broken, user, { product: 'premium_month', returnUrl: '/x' })
  t.equal(res.statusCode, 502)
  t.match(res.json(), { code: 'BAD_GATEWAY' })
  t.notMatch(res.body, /Invalid API Key/, "the gateway's text is not echoed")
  const rows = await broken.db.selectFrom('payment').select('status').where('user_id', '=', user.id).execute()
  t.same(rows, [{ status: 'failed' }])
})
