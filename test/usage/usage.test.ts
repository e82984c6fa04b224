import t from 'tap'
import { currentPeriod } from '../../src/usage/plans.js'
import { readCounter } from '../../src/usage/queries.js'
import { consumeUsage } from '../../src/usage/service.js'
import { buildTestApp, call, signUp, type TestUser } from '../helpers/app.js'

// A mutable clock: periods, resetsAt and plan expiry are judged by it, and so is session expiry:
// sessions last a year here, so the clock can move months ahead and the members stay signed in.
let fakeNow = new Date('2026-03-14T15:00:00Z')
const app = await buildTestApp({ env: { SESSION_TTL_DAYS: '365' }, deps: { clock: { now: () => fakeNow } } })
t.beforeEach(() => {
  fakeNow = new Date('2026-03-14T15:00:00Z')
})
// What resets when, seen from that time: the daily counters at the next UTC midnight, the monthly ones
// on the first of the next month.
const NEXT_DAY = '2026-03-15T00:00:00.000Z'
const NEXT_MONTH = '2026-04-01T00:00:00.000Z'

type Plan = 'free' | 'premium' | 'premium_plus'
type Metric = 'aiMessages' | 'compatibilityChecks' | 'journalEntries'

const increment = (user: TestUser, metric: string, body?: unknown) =>
  call(app, 'POST', `/api/v1/usage/${metric}/increment`, { cookie: user.cookie, body })
const planAndUsage = (user: TestUser) => call(app, 'GET', '/api/v1/plan', { cookie: user.cookie })

async function member(plan: Plan = 'free', planExpiresAt: Date | null = null): Promise<TestUser> {
  const user = await signUp(app)
  await app.db.updateTable('user').set({ plan, plan_expires_at: planExpiresAt }).where('id', '=', user.id).execute()
  return user
}

/** The stored count of the metric's period that contains the clock's now. */
const usedNow = (user: TestUser, metric: Metric) =>
  readCounter(app.db, { userId: user.id, metric, periodStart: currentPeriod(metric, fakeNow).start })

t.test('a new member is on free with every metric at zero', async (t) => {
  const user = await member()
  const res = await planAndUsage(user)
  t.equal(res.statusCode, 200)
  t.same(res.json(), {
    plan: 'free',
    planExpiresAt: null,
    usage: [
      { metric: 'aiMessages', used: 0, limit: 10, period: 'day', resetsAt: NEXT_DAY },
      { metric: 'compatibilityChecks', used: 0, limit: 3, period: 'month', resetsAt: NEXT_MONTH },
      { metric: 'journalEntries', used: 0, limit: 5, period: 'day', resetsAt: NEXT_DAY },
    ],
  })
})

t.test('an increment counts 1 by default, or the given amount', async (t) => {
  const user = await member()
  const noBody = await increment(user, 'aiMessages')
  t.equal(noBody.statusCode, 200)
  t.same(noBody.json(), { metric: 'aiMessages', used: 1, limit: 10, remaining: 9, resetsAt: NEXT_DAY })
  const empty = await increment(user, 'aiMessages', {})
  t.match(empty.json(), { used: 2, remaining: 8 })
  const three = await increment(user, 'aiMessages', { amount: 3 })
  t.match(three.json(), { used: 5, remaining: 5 })
  const usage = (await planAndUsage(user)).json().usage
  t.match(usage[0], { metric: 'aiMessages', used: 5, limit: 10 })
  t.match(usage[2], { metric: 'journalEntries', used: 0 }, 'other metrics are separate counters')
})

t.test('a bad amount, an unknown key or an unknown metric is a 400 and counts nothing', async (t) => {
  const user = await member()
  for (const body of [
    { amount: 0 },
    { amount: -1 },
    { amount: 1.5 },
    { amount: 1001 },
    { amount: '1' },
    { amount: null },
    { by: 1 },
    { amount: 1, metric: 'aiMessages' },
  ]) {
    const res = await increment(user, 'aiMessages', body)
    t.equal(res.statusCode, 400, `${JSON.stringify(body)} is refused`)
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }
  for (const metric of ['nope', 'AIMESSAGES', 'ai_messages', '__proto__', 'constructor']) {
    const res = await increment(user, metric, {})
    t.equal(res.statusCode, 400, `metric ${metric} is refused`)
    t.match(res.json(), { code: 'VALIDATION_ERROR', data: { issues: [{ path: 'params.metric' }] } })
  }
  t.equal(await usedNow(user, 'aiMessages'), 0)
  const rows = await app.db.selectFrom('usage_counter').select('metric').where('user_id', '=', user.id).execute()
  t.same(rows, [], 'no counter row was created')
})

t.test('at the limit the increment is a 402 PLAN_LIMIT_REACHED and nothing is counted', async (t) => {
  const user = await member()
  t.equal((await increment(user, 'journalEntries', { amount: 4 })).statusCode, 200)
  // 4 + 2 would pass 5: refused whole, not partly counted.
  const over = await increment(user, 'journalEntries', { amount: 2 })
  t.equal(over.statusCode, 402)
  t.same(over.json(), {
    code: 'PLAN_LIMIT_REACHED',
    status: 402,
    message: 'The journalEntries limit of your plan is reached',
    data: { metric: 'journalEntries', limit: 5, used: 4, resetsAt: NEXT_DAY },
    defined: false,
  })
  t.equal(await usedNow(user, 'journalEntries'), 4)
  const last = await increment(user, 'journalEntries', { amount: 1 })
  t.same(last.json(), { metric: 'journalEntries', used: 5, limit: 5, remaining: 0, resetsAt: NEXT_DAY })
  const full = await increment(user, 'journalEntries')
  t.equal(full.statusCode, 402)
  t.match(full.json().data, { used: 5, limit: 5 })
  t.equal(await usedNow(user, 'journalEntries'), 5)
})

t.test('an amount above the whole limit is refused without creating a counter', async (t) => {
  const user = await member()
  const res = await increment(user, 'compatibilityChecks', { amount: 4 })
  t.equal(res.statusCode, 402)
  t.match(res.json().data, { metric: 'compatibilityChecks', limit: 3, used: 0, resetsAt: NEXT_MONTH })
  const rows = await app.db.selectFrom('usage_counter').select('metric').where('user_id', '=', user.id).execute()
  t.same(rows, [])
})

t.test('a new UTC day resets a daily count', async (t) => {
  const user = await member()
  fakeNow = new Date('2026-03-14T23:59:59.999Z')
  t.equal((await increment(user, 'aiMessages', { amount: 10 })).statusCode, 200)
  const refused = await increment(user, 'aiMessages')
  t.equal(refused.statusCode, 402)
  t.equal(refused.json().data.resetsAt, NEXT_DAY)

  fakeNow = new Date(NEXT_DAY)
  const next = await increment(user, 'aiMessages')
  t.equal(next.statusCode, 200)
  t.same(next.json(), { metric: 'aiMessages', used: 1, limit: 10, remaining: 9, resetsAt: '2026-03-16T00:00:00.000Z' })
  t.match((await planAndUsage(user)).json().usage[0], { used: 1, resetsAt: '2026-03-16T00:00:00.000Z' })
})

t.test('a monthly count holds across days and resets on the first of the next UTC month', async (t) => {
  const user = await member()
  fakeNow = new Date('2026-03-01T00:00:00.000Z')
  t.equal((await increment(user, 'compatibilityChecks', { amount: 3 })).statusCode, 200)
  fakeNow = new Date('2026-03-31T23:59:59.999Z')
  const refused = await increment(user, 'compatibilityChecks')
  t.equal(refused.statusCode, 402, 'still March: still at the limit')
  t.equal(refused.json().data.resetsAt, NEXT_MONTH)
  fakeNow = new Date(NEXT_MONTH)
  const april = await increment(user, 'compatibilityChecks')
  t.equal(april.statusCode, 200)
  t.match(april.json(), { used: 1, remaining: 2, resetsAt: '2026-05-01T00:00:00.000Z' })
  fakeNow = new Date('2026-12-31T12:00:00.000Z')
  t.match((await increment(user, 'compatibilityChecks')).json(), { used: 1, resetsAt: '2027-01-01T00:00:00.000Z' })
})

t.test('premium has the premium limits while it runs', async (t) => {
  const user = await member('premium', new Date('2026-04-14T00:00:00Z'))
  const res = (await planAndUsage(user)).json()
  t.equal(res.plan, 'premium')
  t.equal(res.planExpiresAt, '2026-04-14T00:00:00.000Z')
  t.same(
    res.usage.map((u: { limit: number }) => u.limit),
    [200, 30, 50],
  )
  t.match((await increment(user, 'aiMessages', { amount: 150 })).json(), { used: 150, limit: 200, remaining: 50 })
})

t.test('an expired premium plan falls back to the free limits', async (t) => {
  const user = await member('premium', new Date('2026-04-14T00:00:00Z'))
  t.match((await increment(user, 'aiMessages', { amount: 20 })).json(), { used: 20, limit: 200 })

  fakeNow = new Date('2026-04-14T00:00:00.000Z') // the very instant it ends
  const res = (await planAndUsage(user)).json()
  t.equal(res.plan, 'free')
  t.equal(res.planExpiresAt, '2026-04-14T00:00:00.000Z', 'the stored expiry is still shown')
  t.same(
    res.usage.map((u: { limit: number }) => u.limit),
    [10, 3, 5],
  )

  const refused = await increment(user, 'journalEntries', { amount: 6 })
  t.equal(refused.statusCode, 402)
  t.match(refused.json().data, { limit: 5 })
  t.match((await increment(user, 'journalEntries', { amount: 5 })).json(), { used: 5, limit: 5, remaining: 0 })
  t.equal((await increment(user, 'journalEntries')).statusCode, 402)
})

t.test('a count above a lowered limit is refused and reported, never negative', async (t) => {
  const user = await member('premium', new Date('2026-03-14T16:00:00Z'))
  t.equal((await increment(user, 'aiMessages', { amount: 25 })).statusCode, 200)
  fakeNow = new Date('2026-03-14T17:00:00Z') // lapsed, same day
  const refused = await increment(user, 'aiMessages')
  t.equal(refused.statusCode, 402)
  t.match(refused.json().data, { limit: 10, used: 25 })
  t.match((await planAndUsage(user)).json().usage[0], { used: 25, limit: 10 })
})

t.test('premium_plus is unlimited: limit and remaining are null', async (t) => {
  const user = await member('premium_plus')
  const res = (await planAndUsage(user)).json()
  t.equal(res.plan, 'premium_plus')
  t.same(
    res.usage.map((u: { limit: null }) => u.limit),
    [null, null, null],
  )
  for (let i = 1; i <= 3; i++) {
    const inc = await increment(user, 'compatibilityChecks', { amount: 1000 })
    t.equal(inc.statusCode, 200)
    t.same(inc.json(), {
      metric: 'compatibilityChecks',
      used: i * 1000,
      limit: null,
      remaining: null,
      resetsAt: NEXT_MONTH,
    })
  }
  t.match((await planAndUsage(user)).json().usage[1], { used: 3000, limit: null })
})

t.test('premium_plus that expired is free again', async (t) => {
  const user = await member('premium_plus', new Date('2026-03-14T14:59:59Z'))
  t.equal((await planAndUsage(user)).json().plan, 'free')
  t.equal((await increment(user, 'compatibilityChecks', { amount: 4 })).statusCode, 402)
})

t.test("a member's increments never touch another member's counters", async (t) => {
  const alice = await member()
  const bob = await member()
  t.equal((await increment(bob, 'aiMessages', { amount: 7 })).statusCode, 200)
  // No route takes a user id: a smuggled one is refused or ignored.
  const smuggled = await increment(alice, 'aiMessages', { amount: 1, userId: bob.id })
  t.equal(smuggled.statusCode, 400)
  const viaQuery = await call(app, 'POST', `/api/v1/usage/aiMessages/increment?userId=${bob.id}`, {
    cookie: alice.cookie,
    body: { amount: 3 },
  })
  t.match(viaQuery.json(), { used: 3 })
  const readViaQuery = await call(app, 'GET', `/api/v1/plan?userId=${bob.id}`, { cookie: alice.cookie })
  t.same([readViaQuery.statusCode, readViaQuery.json().code], [400, 'VALIDATION_ERROR'], 'the plan takes no query')
  t.match((await planAndUsage(alice)).json().usage[0], { used: 3 })
  t.equal(await usedNow(bob, 'aiMessages'), 7)
  t.equal(await usedNow(alice, 'aiMessages'), 3)
  t.match((await planAndUsage(bob)).json().usage[0], { used: 7 })
})

t.test('consumeUsage inside a transaction that rolls back counts nothing', async (t) => {
  const user = await member()
  const subject = { id: user.id, plan: 'free' as const, planExpiresAt: null }
  await t.rejects(
    app.db.transaction().execute(async (trx) => {
      const r = await consumeUsage(trx, subject, 'journalEntries', 3, fakeNow)
      t.equal(r.used, 3, 'counted inside the transaction')
      throw new Error('the act it paid for failed')
    }),
    { message: 'the act it paid for failed' },
  )
  t.equal(await usedNow(user, 'journalEntries'), 0)
  const after = await consumeUsage(app.db, subject, 'journalEntries', 5, fakeNow)
  t.equal(after.used, 5, 'the whole limit is still available')
})

t.test('a refusal inside a transaction leaves it usable; the caller decides', async (t) => {
  const user = await member()
  const subject = { id: user.id, plan: 'free' as const, planExpiresAt: null }
  await app.db.transaction().execute(async (trx) => {
    await consumeUsage(trx, subject, 'compatibilityChecks', 3, fakeNow)
    await t.rejects(consumeUsage(trx, subject, 'compatibilityChecks', 1, fakeNow), {
      status: 402,
      code: 'PLAN_LIMIT_REACHED',
      data: { metric: 'compatibilityChecks', limit: 3, used: 3 },
    })
    // The refused statement did not abort the transaction (it wrote nothing and raised nothing in SQL).
    t.equal(
      await readCounter(trx, {
        userId: user.id,
        metric: 'compatibilityChecks',
        periodStart: currentPeriod('compatibilityChecks', fakeNow).start,
      }),
      3,
    )
  })
  t.equal(await usedNow(user, 'compatibilityChecks'), 3)
})

t.test('consumeUsage refuses an amount that is not a positive integer (a caller bug)', async (t) => {
  const user = await member()
  const subject = { id: user.id, plan: 'premium_plus' as const, planExpiresAt: null }
  for (const amount of [0, -5, 1.5, Number.NaN, 1001]) {
    await t.rejects(consumeUsage(app.db, subject, 'aiMessages', amount, fakeNow), RangeError, `amount ${amount}`)
  }
  t.equal(await usedNow(user, 'aiMessages'), 0)
})

t.test('the OpenAPI document describes both routes with schemas and examples', async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json()
  const get = doc.paths['/api/v1/plan'].get
  t.equal(get.operationId, 'getPlanAndUsage')
  t.equal(get.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/PlanAndUsage')
  const post = doc.paths['/api/v1/usage/{metric}/increment'].post
  t.equal(post.operationId, 'incrementUsage')
  t.equal(post.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/UsageIncrement')
  t.equal(post.responses['402'].content['application/json'].schema.$ref, '#/components/schemas/PlanLimitError')
  for (const name of ['PlanAndUsage', 'UsageIncrement', 'PlanLimitError']) {
    t.ok(doc.components.schemas[name].examples?.length, `${name} has an example`)
  }
  t.ok(post.requestBody.content['application/json'].examples, 'the request body has examples')
})
