// Plan-limit enforcement: the one function every domain calls to count usage.
import type { DB, Executor, Trx } from '../../db/index.js'
import type { Plan } from '../shared/plans.js'
import type { Clock } from '../shared/clock.js'
import type { RequestContext } from '../shared/context.js'
import { AppError } from '../shared/errors.js'
import { currentPeriod, effectivePlan, METRIC_PERIOD, METRICS, PLAN_LIMITS, type Metric, type Period } from './plans.js'
import type { CountWriter } from './count-writer.js'
import { MAX_AMOUNT } from './schemas.js'
import { addToCounter, type CounterAttempt, type CounterKey, readCounter, readCounters } from './queries.js'

export interface UsageDeps {
  db: DB
  clock: Clock
  /** Writes the counts asked for on their own, several per statement (count-writer.ts). */
  counts: CountWriter
}

interface UsageSubject {
  id: string
  plan: Plan
  planExpiresAt: Date | null
}

export interface UsageResult {
  metric: Metric
  used: number
  limit: number | null
  remaining: number | null
  resetsAt: Date
}

interface MetricUsage {
  metric: Metric
  used: number
  limit: number | null
  period: Period
  resetsAt: Date
}

export interface PlanAndUsage {
  /** The plan in force now: a lapsed paid plan is `free`. */
  plan: Plan
  /** As stored: when the paid plan ends (in the past once it lapsed); null when it does not lapse. */
  planExpiresAt: Date | null
  usage: MetricUsage[]
}

/**
 * Counts `amount` of `metric` for the user, or throws 402 PLAN_LIMIT_REACHED and counts nothing.
 * The check and the increment are one statement, so the limit holds under concurrency and across
 * instances. Other domains call it inside the transaction of the act it pays for, with that act's
 * `now`, so the count rolls back with the act.
 */
export function consumeUsage(db: Executor, user: UsageSubject, metric: Metric, amount: number, now: Date): Promise<UsageResult> {
  return count(db, (key, limit) => addToCounter(db, key, amount, limit), user, metric, amount, now)
}

/** consumeUsage's rule, whichever way the count reaches the database (`add`). */
async function count(
  db: Executor,
  add: (key: CounterKey, limit: number | null) => Promise<CounterAttempt>,
  user: UsageSubject,
  metric: Metric,
  amount: number,
  now: Date,
): Promise<UsageResult> {
  // A caller bug, not a user error: a zero, negative or fractional amount would corrupt the count.
  if (!Number.isInteger(amount) || amount < 1 || amount > MAX_AMOUNT) {
    throw new RangeError(`usage amount must be an integer 1..${MAX_AMOUNT}, got ${amount}`)
  }
  const limit = PLAN_LIMITS[effectivePlan(user, now)][metric]
  const { start, resetsAt } = currentPeriod(metric, now)
  const key = { userId: user.id, metric, periodStart: start }

  // More than the whole limit at once can never fit: refuse without touching the row.
  const attempt = limit !== null && amount > limit ? undefined : await add(key, limit)
  const used = attempt?.used
  if (used === undefined) {
    // The snapshot already showed the counter too full: that count is the answer. Otherwise a
    // concurrent call filled it after the snapshot, and only a fresh read tells how far.
    const current = attempt && limit !== null && attempt.seen + amount > limit ? attempt.seen : await readCounter(db, key)
    throw new AppError(402, 'PLAN_LIMIT_REACHED', `The ${metric} limit of your plan is reached`, {
      data: { metric, limit, used: current, resetsAt },
    })
  }
  return { metric, used, limit, remaining: limit === null ? null : Math.max(0, limit - used), resetsAt }
}

/**
 * Runs `act` in one transaction that first counts one use of `metric`: an act refused by the limit,
 * or one that fails, costs nothing.
 */
export function countedAct<T>(db: DB, user: UsageSubject, metric: Metric, now: Date, act: (trx: Trx) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await consumeUsage(trx, user, metric, 1, now)
    return act(trx)
  })
}

/** A count of its own, asked for by the user (POST /api/v1/usage/{metric}/increment): written with the others waiting. */
export function incrementUsage(
  deps: UsageDeps,
  _ctx: RequestContext,
  user: UsageSubject,
  metric: Metric,
  amount: number,
): Promise<UsageResult> {
  return count(deps.db, (key, limit) => deps.counts.add(key, amount, limit), user, metric, amount, deps.clock.now())
}

/** The effective plan and, for every metric, the count of its current period against the limit. */
export async function getPlanAndUsage(deps: UsageDeps, _ctx: RequestContext, user: UsageSubject): Promise<PlanAndUsage> {
  const now = deps.clock.now()
  const plan = effectivePlan(user, now)
  const periods = METRICS.map((metric) => ({ metric, ...currentPeriod(metric, now) }))
  const counts = await readCounters(
    deps.db,
    user.id,
    periods.map((p) => ({ metric: p.metric, periodStart: p.start })),
  )
  return {
    plan,
    planExpiresAt: user.planExpiresAt,
    usage: periods.map((p, i) => ({
      metric: p.metric,
      used: counts[i] ?? 0,
      limit: PLAN_LIMITS[plan][p.metric],
      period: METRIC_PERIOD[p.metric],
      resetsAt: p.resetsAt,
    })),
  }
}
