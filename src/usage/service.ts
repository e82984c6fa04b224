// Plan-limit enforcement: the one function every domain calls to count usage.
import { sql, type Kysely, type Transaction } from 'kysely'
import type { Database } from '../../db/schema.js'
import type { Plan } from '../auth/tables.js'
import { AppError } from '../errors.js'
import { currentPeriod, effectivePlan, PLAN_LIMITS, type Metric } from './plans.js'

export interface UsageSubject {
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

/**
 * Counts `amount` of `metric` for the user, or throws 402 PLAN_LIMIT_REACHED and counts nothing.
 * The check and the increment are one statement, so the limit holds under concurrency and across
 * instances. Pass the caller's transaction to roll the count back with the act it pays for.
 */
export async function consumeUsage(
  db: Kysely<Database> | Transaction<Database>,
  user: UsageSubject,
  metric: Metric,
  amount: number,
  now: Date,
): Promise<UsageResult> {
  const limit = PLAN_LIMITS[effectivePlan(user, now)][metric]
  const { start, resetsAt } = currentPeriod(metric, now)
  const refuse = (used: number) =>
    new AppError(402, 'PLAN_LIMIT_REACHED', `The ${metric} limit of your plan is reached`, {
      data: { metric, limit, used, resetsAt: resetsAt.toISOString() },
    })

  if (limit !== null && amount > limit) throw refuse(await readUsed(db, user.id, metric, start))

  const row = await db
    .insertInto('usage_counter')
    .values({ user_id: user.id, metric, period_start: start, used: amount })
    .onConflict((oc) => {
      const update = oc
        .columns(['user_id', 'metric', 'period_start'])
        .doUpdateSet({ used: sql`usage_counter.used + excluded.used`, updated_at: sql`now()` })
      return limit === null ? update : update.where(sql<boolean>`usage_counter.used + excluded.used <= ${limit}`)
    })
    .returning('used')
    .executeTakeFirst()

  if (!row) throw refuse(await readUsed(db, user.id, metric, start))
  return { metric, used: row.used, limit, remaining: limit === null ? null : limit - row.used, resetsAt }
}

export async function readUsed(
  db: Kysely<Database> | Transaction<Database>,
  userId: string,
  metric: Metric,
  periodStart: Date,
): Promise<number> {
  const row = await db
    .selectFrom('usage_counter')
    .select('used')
    .where('user_id', '=', userId)
    .where('metric', '=', metric)
    .where('period_start', '=', periodStart)
    .executeTakeFirst()
  return row?.used ?? 0
}
