// Purchases through the Midtrans adapter against a local server that answers like Snap and the
// Core API; notifications signed SHA-512(order_id + status_code + gross_amount + server_key).
import t from 'tap'
import { buildTestApp, signUp, call } from '../helpers/app.js'
import {
  auditActions,
  createResult,
  FakeMidtrans,
  paymentRow,
  postWebhook,
  purchasesOf,
  startCheckout,
  userPlan,
  verify,
} from '../helpers/gateways.js'
import { mapMidtransStatus } from '../../src/payment/midtrans.js'

const midtrans = await new FakeMidtrans().start()
const app = await buildTestApp({
  env: { PAYMENT_GATEWAY: 'midtrans', MIDTRANS_SERVER_KEY: midtrans.serverKey, MIDTRANS_API_BASE: midtrans.url },
})
const notify = (body: string) => postWebhook(app, 'midtrans', body)

/** A new member's premium_month checkout, in this status at the gateway. */
async function premiumCheckout(status: string) {
  const user = await signUp(app)
  const checkout = await startCheckout(app, user, { product: 'premium_month' })
  midtrans.setStatus(checkout.paymentId, status)
  return { user, checkout }
}

t.test('each product bought end to end through Snap and a settlement notification', async (t) => {
  const user = await signUp(app)
  const resultId = await createResult(app, user)
  const expected = { deep_insights: 49_000, premium_month: 79_000, premium_plus_month: 149_000 } as const
  for (const product of ['deep_insights', 'premium_month', 'premium_plus_month'] as const) {
    const checkout = await startCheckout(app, user, { product, ...(product === 'deep_insights' ? { resultId } : {}) })
    t.equal(checkout.provider, 'midtrans')
    t.match(checkout.redirectUrl, /^https:\/\/app\.sandbox\.midtrans\.test\/snap\/v4\/redirection\//)
    const snap = midtrans.snapCalls.at(-1) as {
      transaction_details: { order_id: string; gross_amount: number }
      callbacks: { finish: string }
    }
    t.same(
      snap.transaction_details,
      { order_id: checkout.paymentId, gross_amount: expected[product] },
      `${product}: whole rupiah`,
    )
    t.equal(snap.callbacks.finish, `http://localhost:3000/payments/done?paymentId=${checkout.paymentId}`)

    midtrans.setStatus(checkout.paymentId, 'settlement')
    const res = await notify(midtrans.notification(checkout.paymentId))
    t.equal(res.statusCode, 200, product)
    const row = await paymentRow(app, checkout.paymentId)
    t.equal(row.status, 'paid', product)
    t.ok(row.granted_at, product)
  }
  t.equal((await userPlan(app, user.id)).plan, 'premium_plus', 'premium then premium_plus: the upgrade wins')
  t.equal((await purchasesOf(app, resultId)).length, 1)
})

t.test('a notification is confirmed by the status API, never taken at its word', async (t) => {
  const { user, checkout } = await premiumCheckout('pending')
  // Correctly signed "settlement" for a transaction the gateway still reports as pending.
  const res = await notify(midtrans.notification(checkout.paymentId, { transactionStatus: 'settlement' }))
  t.equal(res.statusCode, 200)
  t.equal((await paymentRow(app, checkout.paymentId)).status, 'pending')
  t.equal((await userPlan(app, user.id)).plan, 'free')
})

t.test('a bad signature is a 400 and changes nothing', async (t) => {
  const { user, checkout } = await premiumCheckout('settlement')
  const forged = midtrans.notification(checkout.paymentId, { serverKey: 'SB-Mid-server-attacker' })
  const tampered = JSON.stringify({ ...JSON.parse(midtrans.notification(checkout.paymentId)), gross_amount: '1.00' })
  const unsigned = JSON.stringify({ ...JSON.parse(midtrans.notification(checkout.paymentId)), signature_key: undefined })
  for (const [name, body] of [
    ['forged', forged],
    ['tampered amount', tampered],
    ['unsigned', unsigned],
    ['not JSON', '{"order_id":'],
  ] as const) {
    const res = await notify(body)
    t.equal(res.statusCode, 400, name)
    t.match(res.json(), { code: 'BAD_REQUEST', status: 400 }, name)
  }
  t.equal((await paymentRow(app, checkout.paymentId)).status, 'pending')
  t.equal((await userPlan(app, user.id)).plan, 'free')
})

t.test('duplicates: twice in sequence and ten times concurrently grant once', async (t) => {
  const { user, checkout } = await premiumCheckout('settlement')
  const body = midtrans.notification(checkout.paymentId)
  const all = await Promise.all(Array.from({ length: 10 }, () => notify(body)))
  t.same(
    all.map((r) => r.statusCode),
    Array(10).fill(200),
  )
  t.equal((await notify(body)).statusCode, 200)
  t.equal((await auditActions(app, checkout.paymentId)).filter((a) => a === 'payment.paid').length, 1)
  const plan = await userPlan(app, user.id)
  const days = (plan.plan_expires_at!.getTime() - Date.now()) / 86_400_000
  t.ok(days > 29.9 && days <= 30, `30 days once (${days})`)
})

t.test('verify before any payment method was chosen stays pending; expire and cancel end it', async (t) => {
  const user = await signUp(app)
  const a = await startCheckout(app, user, { product: 'premium_month' })
  t.equal((await verify(app, user, a.paymentId)).json().status, 'pending', 'status API 404 = not started')
  midtrans.setStatus(a.paymentId, 'expire')
  await notify(midtrans.notification(a.paymentId))
  t.equal((await paymentRow(app, a.paymentId)).status, 'expired')

  const b = await startCheckout(app, user, { product: 'premium_month' })
  midtrans.setStatus(b.paymentId, 'cancel')
  t.equal((await verify(app, user, b.paymentId)).json().status, 'failed')
  // A capture after cancel/expiry still counts: the money moved.
  midtrans.setStatus(a.paymentId, 'settlement')
  await notify(midtrans.notification(a.paymentId))
  t.equal((await paymentRow(app, a.paymentId)).status, 'paid')
})

t.test('refund notification takes premium back; refund before settlement records nothing granted', async (t) => {
  const { user, checkout } = await premiumCheckout('settlement')
  const settlement = midtrans.notification(checkout.paymentId)
  midtrans.setStatus(checkout.paymentId, 'refund')
  await notify(midtrans.notification(checkout.paymentId))
  await notify(settlement) // the late settlement notice: the gateway now says refund
  const row = await paymentRow(app, checkout.paymentId)
  t.equal(row.status, 'refunded')
  t.equal(row.granted_at, null)
  t.equal((await userPlan(app, user.id)).plan, 'free')

  const second = await startCheckout(app, user, { product: 'premium_month' })
  midtrans.setStatus(second.paymentId, 'settlement')
  await notify(midtrans.notification(second.paymentId))
  t.equal((await userPlan(app, user.id)).plan, 'premium')
  midtrans.setStatus(second.paymentId, 'refund')
  await notify(midtrans.notification(second.paymentId))
  t.equal((await paymentRow(app, second.paymentId)).status, 'refunded')
  t.equal((await userPlan(app, user.id)).plan, 'free')
})

/** Settles (or moves) a payment at the gateway and tells the service. */
async function settle(paymentId: string, status = 'settlement') {
  midtrans.setStatus(paymentId, status)
  const res = await notify(midtrans.notification(paymentId))
  if (res.statusCode !== 200) throw new Error(res.body)
}
const daysLeft = (plan: { plan_expires_at: Date | null }) =>
  plan.plan_expires_at ? (plan.plan_expires_at.getTime() - Date.now()) / 86_400_000 : 0
const expireNow = (userId: string) =>
  app.db
    .updateTable('user')
    .set({ plan_expires_at: new Date(Date.now() - 86_400_000) })
    .where('id', '=', userId)
    .execute()

t.test('a refund of an old plan payment never takes the days of a later, separate purchase', async (t) => {
  const user = await signUp(app)
  const a = await startCheckout(app, user, { product: 'premium_month' })
  await settle(a.paymentId) // premium, 30 days
  const plus = await startCheckout(app, user, { product: 'premium_plus_month' })
  await settle(plus.paymentId) // the upgrade: A's remaining days are given up
  await expireNow(user.id) // premium_plus runs out
  const b = await startCheckout(app, user, { product: 'premium_month' })
  await settle(b.paymentId) // a new purchase: 30 days from now
  await settle(a.paymentId, 'chargeback') // then the old payment A is charged back
  t.equal((await paymentRow(app, a.paymentId)).status, 'refunded')
  const plan = await userPlan(app, user.id)
  t.equal(plan.plan, 'premium', 'B was paid for and is not refunded')
  t.ok(daysLeft(plan) > 29, `B's 30 days remain (${daysLeft(plan).toFixed(2)})`)
  const [refunded] = await app.db
    .selectFrom('audit_event')
    .select('details')
    .where('action', '=', 'payment.refunded')
    .where('target_id', '=', a.paymentId)
    .execute()
  t.match(refunded?.details, { revoked: true, changed: false })

  // A lapse in between breaks the run the same way, with no other plan involved.
  const other = await signUp(app)
  const first = await startCheckout(app, other, { product: 'premium_month' })
  await settle(first.paymentId)
  await expireNow(other.id)
  const again = await startCheckout(app, other, { product: 'premium_month' })
  await settle(again.paymentId)
  await settle(first.paymentId, 'refund')
  t.ok(daysLeft(await userPlan(app, other.id)) > 29, 'the purchase after the lapse keeps its days')
})

t.test('refunds of stacked plan payments each take back their own 30 days, in either order', async (t) => {
  for (const order of ['older first', 'newer first'] as const) {
    const user = await signUp(app)
    const a = await startCheckout(app, user, { product: 'premium_month' })
    await settle(a.paymentId)
    const b = await startCheckout(app, user, { product: 'premium_month' })
    await settle(b.paymentId) // stacked: 60 days
    t.ok(daysLeft(await userPlan(app, user.id)) > 59, `${order}: 60 days bought`)
    const [first, second] = order === 'older first' ? [a, b] : [b, a]
    await settle(first.paymentId, 'refund')
    const after = daysLeft(await userPlan(app, user.id))
    t.ok(after > 29 && after <= 30, `${order}: 30 days left after one refund (${after.toFixed(2)})`)
    await settle(second.paymentId, 'refund')
    t.equal((await userPlan(app, user.id)).plan, 'free', `${order}: nothing left after both`)
  }
})

t.test('a refund leaves alone an expiry an admin set since the payment', async (t) => {
  const user = await signUp(app)
  const a = await startCheckout(app, user, { product: 'premium_month' })
  await settle(a.paymentId)
  const granted = new Date(Date.now() + 365 * 86_400_000)
  await app.db.updateTable('user').set({ plan_expires_at: granted }).where('id', '=', user.id).execute()
  await settle(a.paymentId, 'refund')
  const plan = await userPlan(app, user.id)
  t.same([plan.plan, plan.plan_expires_at?.getTime()], ['premium', granted.getTime()])
})

t.test('a gross amount that does not match is refused and audited', async (t) => {
  const user = await signUp(app)
  const checkout = await startCheckout(app, user, { product: 'premium_plus_month' })
  midtrans.setStatus(checkout.paymentId, 'settlement', { grossAmount: '1000.00' })
  t.equal((await notify(midtrans.notification(checkout.paymentId))).statusCode, 200)
  t.equal((await paymentRow(app, checkout.paymentId)).status, 'pending')
  t.same(await auditActions(app, checkout.paymentId), ['payment.amount_mismatch'])
  t.equal((await userPlan(app, user.id)).plan, 'free')
})

t.test('Midtrans statuses map as documented', async (t) => {
  t.equal(mapMidtransStatus('settlement'), 'paid')
  t.equal(mapMidtransStatus('capture', 'accept'), 'paid')
  t.equal(mapMidtransStatus('capture', 'challenge'), 'pending')
  t.equal(mapMidtransStatus('pending'), 'pending')
  t.equal(mapMidtransStatus('deny'), 'pending')
  t.equal(mapMidtransStatus('cancel'), 'failed')
  t.equal(mapMidtransStatus('failure'), 'failed')
  t.equal(mapMidtransStatus('expire'), 'expired')
  t.equal(mapMidtransStatus('refund'), 'refunded')
  t.equal(mapMidtransStatus('partial_refund'), 'paid')
})

t.test("a member cannot verify or see another member's Midtrans payment", async (t) => {
  const owner = await signUp(app)
  const other = await signUp(app)
  const checkout = await startCheckout(app, owner, { product: 'premium_month' })
  t.equal((await verify(app, other, checkout.paymentId)).statusCode, 404)
  const list = await call(app, 'GET', '/api/v1/payments', { cookie: other.cookie })
  t.same(list.json().items, [])
})
