import t from 'tap'
import { buildTestApp, call, signUp, signUpWithRole } from '../helpers/app.js'
import { auditEvents, eachIsValidationError } from '../helpers/expect.js'

// This file has its own database: every row in it is seeded here, so the expected numbers are known.
const app = await buildTestApp()
const admin = await signUpWithRole(app, 'admin')
const owner = await signUpWithRole(app, 'owner')
const members = [await signUp(app), await signUp(app), await signUp(app)]
await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: members[0]!.email, password: members[0]!.password } })

const future = new Date(Date.now() + 30 * 86_400_000)
const past = new Date(Date.now() - 86_400_000)
// Users who signed up in January 2026, with roles and plans (one paid plan has lapsed: it counts as free).
const januaryUsers = [
  { id: 'jan-a', created_at: '2026-01-10T00:00:00.000Z', role: 'member', plan: 'premium', plan_expires_at: future },
  { id: 'jan-b', created_at: '2026-01-10T23:59:59.999Z', role: 'admin', plan: 'premium_plus', plan_expires_at: null },
  { id: 'jan-c', created_at: '2026-01-12T12:00:00.000Z', role: 'member', plan: 'premium', plan_expires_at: past },
  { id: 'jan-d', created_at: '2026-01-14T00:00:00.000Z', role: 'member', plan: 'free', plan_expires_at: null },
  { id: 'jan-e', created_at: '2026-01-08T23:59:59.999Z', role: 'member', plan: 'free', plan_expires_at: null },
] as const
await app.db
  .insertInto('user')
  .values(januaryUsers.map((u) => ({ ...u, name: u.id, email: `${u.id}@example.com` })))
  .execute()
await app.db
  .insertInto('session')
  .values([
    { id: 's-expired', token_hash: 'h-expired', user_id: 'jan-a', expires_at: past },
    { id: 's-live', token_hash: 'h-live', user_id: 'jan-b', expires_at: future },
  ])
  .execute()

await app.db
  .insertInto('usage_counter')
  .values([
    { user_id: 'jan-a', metric: 'aiMessages', period_start: new Date('2026-01-10T00:00:00Z'), used: 3 },
    { user_id: 'jan-b', metric: 'aiMessages', period_start: new Date('2026-01-10T00:00:00Z'), used: 5 },
    { user_id: 'jan-a', metric: 'aiMessages', period_start: new Date('2026-01-12T00:00:00Z'), used: 4 },
    { user_id: 'jan-a', metric: 'aiMessages', period_start: new Date('2026-01-14T00:00:00Z'), used: 6 }, // after the range
    { user_id: 'jan-a', metric: 'journalEntries', period_start: new Date('2026-01-08T00:00:00Z'), used: 9 }, // before it
    { user_id: 'jan-a', metric: 'compatibilityChecks', period_start: new Date('2026-01-01T00:00:00Z'), used: 2 }, // month overlaps
    { user_id: 'jan-c', metric: 'compatibilityChecks', period_start: new Date('2026-01-01T00:00:00Z'), used: 1 },
    { user_id: 'jan-c', metric: 'compatibilityChecks', period_start: new Date('2025-12-01T00:00:00Z'), used: 7 }, // month before
  ])
  .execute()

const payment = (
  id: string,
  product: string,
  amount: number,
  status: 'paid' | 'pending' | 'refunded',
  grantedAt: string | null,
) => ({
  id,
  user_id: 'jan-a',
  product,
  amount,
  status,
  provider: 'sandbox' as const,
  return_url: '/x',
  granted_at: grantedAt === null ? null : new Date(grantedAt),
  expires_at: future,
})
await app.db
  .insertInto('payment')
  .values([
    payment('p1', 'deep_insights', 49000, 'paid', '2026-01-09T10:00:00Z'),
    payment('p2', 'deep_insights', 49000, 'paid', '2026-01-13T23:00:00Z'),
    payment('p3', 'premium_month', 79000, 'paid', '2026-01-11T00:00:00Z'),
    payment('p4', 'premium_month', 79000, 'paid', '2026-01-14T00:00:00Z'), // after the range
    payment('p5', 'premium_plus_month', 149000, 'pending', null),
    payment('p6', 'premium_plus_month', 149000, 'refunded', '2026-01-10T00:00:00Z'),
  ])
  .execute()

const analytics = (query: string, cookie = admin.cookie) => call(app, 'GET', `/api/v1/admin/analytics/usage?${query}`, { cookie })

t.test('analytics over a range equal the counts of the seeded data', async (t) => {
  const res = await analytics('from=2026-01-09&to=2026-01-13')
  t.equal(res.statusCode, 200, res.body)
  const body = res.json()
  const apiUsers = [admin, owner, ...members]
  t.same(body.range, { from: '2026-01-09', to: '2026-01-13' })
  t.equal(body.users.total, apiUsers.length + januaryUsers.length)
  t.same(body.users.byRole, { member: members.length + 4, admin: 2, owner: 1 })
  t.same(body.users.byPlan, { free: apiUsers.length + 3, premium: 1, premium_plus: 1 }, 'the lapsed premium counts as free')
  t.same(body.users.signupsPerDay, [
    { date: '2026-01-09', count: 0 },
    { date: '2026-01-10', count: 2 },
    { date: '2026-01-11', count: 0 },
    { date: '2026-01-12', count: 1 },
    { date: '2026-01-13', count: 0 },
  ])
  // one per API sign-up, one more sign-in, one live seeded session; the expired one is not active
  t.equal(body.activeSessions, apiUsers.length + 1 + 1)
  t.same(body.usage, [
    { metric: 'aiMessages', period: '2026-01-10', total: 8, users: 2 },
    { metric: 'aiMessages', period: '2026-01-12', total: 4, users: 1 },
    { metric: 'compatibilityChecks', period: '2026-01', total: 3, users: 2 },
  ])
  t.same(body.payments, {
    paidCount: 3,
    revenueIdr: 49000 * 2 + 79000,
    byProduct: { deep_insights: { count: 2, revenueIdr: 98000 }, premium_month: { count: 1, revenueIdr: 79000 } },
  })
})

t.test('owners read the same analytics, and the read is audited', async (t) => {
  const a = (await analytics('from=2026-01-09&to=2026-01-13')).json()
  const b = (await analytics('from=2026-01-09&to=2026-01-13', owner.cookie)).json()
  t.same(b, a)
  const events = await auditEvents(app.db, { action: 'admin.analytics.viewed', actorId: owner.id })
  t.same(
    events.map((e) => e.details),
    [{ range: { from: '2026-01-09', to: '2026-01-13' } }],
  )
})

t.test('a one-day range and the default range of the last 30 days', async (t) => {
  const day = (await analytics('from=2026-01-10&to=2026-01-10')).json()
  t.same(day.users.signupsPerDay, [{ date: '2026-01-10', count: 2 }])
  t.same(day.payments.byProduct, {})
  t.equal(day.payments.paidCount, 0, 'the refunded payment is not revenue')

  const today = new Date().toISOString().slice(0, 10)
  const recent = (await analytics('')).json()
  t.equal(recent.range.to, today)
  t.equal(recent.users.signupsPerDay.length, 30)
  const signedUpToday = recent.users.signupsPerDay.find((d: { date: string }) => d.date === today).count
  const fromDb = await app.db
    .selectFrom('user')
    .select('id')
    .where('created_at', '>=', new Date(`${today}T00:00:00Z`))
    .execute()
  t.equal(signedUpToday, fromDb.length)
  t.equal(signedUpToday, 2 + members.length)
})

t.test('analytics refuse bad ranges', async (t) => {
  const badRanges: Array<[query: string, why: string]> = [
    ['from=2026-01-13&to=2026-01-09', 'from after to'],
    ['from=2024-01-01&to=2026-01-01', 'longer than 366 days'],
    ['from=yesterday', 'not a date'],
    ['to=2026-13-01', 'no such month'],
    ['from=2026-01-01T00:00:00Z', 'an instant, not a date'],
    ['metric=aiMessages', 'not a parameter of the range'],
  ]
  await eachIsValidationError(t, badRanges, ([query]) => analytics(query))
})
