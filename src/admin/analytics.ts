// Usage analytics for admins: the numbers come straight from the tables, over a UTC date range.
import { sql, type Kysely } from 'kysely'
import type { Database } from '../../db/schema.js'
import type { Plan, Role } from '../auth/tables.js'
import { PLANS } from '../auth/tables.js'
import { currentPeriod, METRIC_PERIOD, METRICS, type Metric } from '../usage/plans.js'

export interface DateRange {
  /** Inclusive UTC calendar dates, YYYY-MM-DD. */
  from: string
  to: string
}

export interface UsageAnalytics {
  range: DateRange
  users: {
    total: number
    byRole: Record<Role, number>
    byPlan: Record<Plan, number>
    signupsPerDay: Array<{ date: string; count: number }>
  }
  activeSessions: number
  usage: Array<{ metric: Metric; period: string; total: number; users: number }>
  payments: { paidCount: number; revenueIdr: number; byProduct: Record<string, { count: number; revenueIdr: number }> }
}

const DAY_MS = 24 * 60 * 60 * 1000
const startOf = (date: string) => new Date(`${date}T00:00:00.000Z`)
const dayAfter = (date: string) => new Date(startOf(date).getTime() + DAY_MS)

export function daysOf(range: DateRange): string[] {
  const days: string[] = []
  for (let t = startOf(range.from).getTime(); t <= startOf(range.to).getTime(); t += DAY_MS) {
    days.push(new Date(t).toISOString().slice(0, 10))
  }
  return days
}

export async function usageAnalytics(db: Kysely<Database>, range: DateRange, now: Date): Promise<UsageAnalytics> {
  const from = startOf(range.from)
  const toExclusive = dayAfter(range.to)

  // Current state, not the range: who exists now, with which role and plan (a lapsed plan is free).
  const effectivePlan = sql<Plan>`case when plan <> 'free' and plan_expires_at is not null and plan_expires_at <= ${now} then 'free' else plan end`
  const byRoleRows = await db
    .selectFrom('user')
    .select(['role', (eb) => eb.fn.countAll<number>().as('n')])
    .groupBy('role')
    .execute()
  const byPlanRows = await db
    .selectFrom('user')
    .select([effectivePlan.as('plan'), (eb) => eb.fn.countAll<number>().as('n')])
    .groupBy(sql`1`) // the first output column: repeating the expression would bind `now` twice
    .execute()
  const byRole: Record<Role, number> = { member: 0, admin: 0, owner: 0 }
  for (const r of byRoleRows) byRole[r.role] = Number(r.n)
  const byPlan = Object.fromEntries(PLANS.map((p) => [p, 0])) as Record<Plan, number>
  for (const r of byPlanRows) byPlan[r.plan] = Number(r.n)

  const signupDay = sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')`
  const signupRows = await db
    .selectFrom('user')
    .select([signupDay.as('day'), (eb) => eb.fn.countAll<number>().as('n')])
    .where('created_at', '>=', from)
    .where('created_at', '<', toExclusive)
    .groupBy(signupDay)
    .execute()
  const signups = new Map(signupRows.map((r) => [r.day, Number(r.n)]))

  const sessions = await db
    .selectFrom('session')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('expires_at', '>', now)
    .executeTakeFirstOrThrow()

  // A counter belongs to the range when its period (a UTC day or month) overlaps it.
  const usageRows = await db
    .selectFrom('usage_counter')
    .select([
      'metric',
      'period_start',
      (eb) => eb.fn.sum<number>('used').as('total'),
      (eb) => eb.fn.count<number>('user_id').distinct().as('users'),
    ])
    .where((eb) =>
      eb.or(
        METRICS.map((m) =>
          eb.and([
            eb('metric', '=', m),
            eb('period_start', '>=', currentPeriod(m, from).start),
            eb('period_start', '<', toExclusive),
          ]),
        ),
      ),
    )
    .groupBy(['metric', 'period_start'])
    .orderBy('metric')
    .orderBy('period_start')
    .execute()
  const usage = usageRows.map((r) => {
    const metric = r.metric as Metric
    const iso = r.period_start.toISOString()
    return {
      metric,
      period: METRIC_PERIOD[metric] === 'month' ? iso.slice(0, 7) : iso.slice(0, 10),
      total: Number(r.total),
      users: Number(r.users),
    }
  })

  return {
    range,
    users: {
      total: Object.values(byRole).reduce((a, b) => a + b, 0),
      byRole,
      byPlan,
      signupsPerDay: daysOf(range).map((date) => ({ date, count: signups.get(date) ?? 0 })),
    },
    activeSessions: Number(sessions.n),
    usage,
    payments: await paymentTotals(db, from, toExclusive),
  }
}

/** Paid payments by the time they were granted (refunded ones are no longer revenue). */
async function paymentTotals(db: Kysely<Database>, from: Date, toExclusive: Date): Promise<UsageAnalytics['payments']> {
  const paidAt = sql<Date>`coalesce(granted_at, updated_at)`
  const rows = await db
    .selectFrom('payment')
    .select(['product', (eb) => eb.fn.countAll<number>().as('n'), (eb) => eb.fn.sum<number>('amount').as('revenue')])
    .where('status', '=', 'paid')
    .where(paidAt, '>=', from)
    .where(paidAt, '<', toExclusive)
    .groupBy('product')
    .orderBy('product')
    .execute()
  const totals: UsageAnalytics['payments'] = { paidCount: 0, revenueIdr: 0, byProduct: {} }
  for (const r of rows) {
    const count = Number(r.n)
    const revenueIdr = Number(r.revenue)
    totals.byProduct[r.product] = { count, revenueIdr }
    totals.paidCount += count
    totals.revenueIdr += revenueIdr
  }
  return totals
}
