import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely'
import type { Database } from '../../db/schema.js'

type Db = Kysely<Database> | Transaction<Database>

export interface CounterKey {
  userId: string
  metric: string
  periodStart: Date
}

export interface CounterAttempt {
  /** The new count, or undefined when the limit refused and nothing was written. */
  used: number | undefined
  /** The count this statement saw before it acted (its snapshot); 0 when there was no counter yet. */
  seen: number
}

/**
 * Adds `amount` to the counter in one statement, guarded by `limit` (null = no guard).
 *
 * The guard that holds the limit is the upsert's `WHERE used + amount <= limit`: Postgres locks the
 * row for the conflicting update and re-checks it on the latest version, so concurrent callers (in
 * this process or on another instance) can never overshoot. Before that, the statement's snapshot
 * is checked too: a counter already too full to take `amount` is refused without locking or writing
 * the row, so a burst of calls at the limit costs one read each instead of queueing for the row
 * lock. That shortcut is safe because counts only grow within a period.
 */
export async function addToCounter(db: Db, key: CounterKey, amount: number, limit: number | null): Promise<CounterAttempt> {
  const fits = (used: RawBuilder<number>) => (limit === null ? sql<boolean>`true` : sql<boolean>`${used} + ${amount} <= ${limit}`)
  const row = await db
    .with('seen', (qb) =>
      qb
        .selectFrom('usage_counter')
        .select('used')
        .where('user_id', '=', key.userId)
        .where('metric', '=', key.metric)
        .where('period_start', '=', key.periodStart),
    )
    .with('attempt', (qb) =>
      qb
        .insertInto('usage_counter')
        .columns(['user_id', 'metric', 'period_start', 'used'])
        .expression(
          qb
            .selectNoFrom([
              sql<string>`${key.userId}::text`.as('user_id'),
              sql<string>`${key.metric}::text`.as('metric'),
              sql<Date>`${key.periodStart}::timestamptz`.as('period_start'),
              sql<number>`${amount}::integer`.as('used'),
            ])
            .where(fits(sql<number>`coalesce((select used from seen), 0)`)),
        )
        .onConflict((oc) => {
          const update = oc
            .columns(['user_id', 'metric', 'period_start'])
            .doUpdateSet({ used: sql`usage_counter.used + excluded.used`, updated_at: sql`now()` })
          return limit === null ? update : update.where(fits(sql<number>`usage_counter.used`))
        })
        .returning('used'),
    )
    .selectNoFrom([
      sql<number | null>`(select used from attempt)`.as('used'),
      sql<number>`coalesce((select used from seen), 0)`.as('seen'),
    ])
    .executeTakeFirstOrThrow()
  return { used: row.used ?? undefined, seen: row.seen }
}

export async function readCounter(db: Db, key: CounterKey): Promise<number> {
  const row = await db
    .selectFrom('usage_counter')
    .select('used')
    .where('user_id', '=', key.userId)
    .where('metric', '=', key.metric)
    .where('period_start', '=', key.periodStart)
    .executeTakeFirst()
  return row?.used ?? 0
}

/** The counts of several (metric, period) pairs of one user in one query; missing counters are 0. */
export async function readCounters(
  db: Db,
  userId: string,
  keys: { metric: string; periodStart: Date }[],
): Promise<number[]> {
  if (keys.length === 0) return []
  const rows = await db
    .selectFrom('usage_counter')
    .select(['metric', 'period_start', 'used'])
    .where('user_id', '=', userId)
    .where((eb) => eb.or(keys.map((k) => eb.and([eb('metric', '=', k.metric), eb('period_start', '=', k.periodStart)]))))
    .execute()
  return keys.map(
    (k) => rows.find((r) => r.metric === k.metric && r.period_start.getTime() === k.periodStart.getTime())?.used ?? 0,
  )
}
