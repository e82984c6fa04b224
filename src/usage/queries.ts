import type { Executor } from '../../db/index.js'
import { preparedStatement } from '../../db/prepared.js'

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

// The guard that holds the limit is the upsert's `WHERE used + amount <= limit`: Postgres locks the
// row for the conflicting update and re-checks it on the latest version, so concurrent callers (in
// this process or on another instance) can never overshoot. Before that, the statement's snapshot
// (`seen`) is checked too: a counter already too full to take `amount` is refused without locking or
// writing the row, so a burst of calls at the limit costs one read each instead of queueing for the
// row lock. That shortcut is safe because counts only grow within a period. A null limit ($5) means
// no guard. Prepared (db/prepared.ts): it runs on every counted request.
const addToCounterSql = (commit: string) => `with seen as (
     select used from usage_counter
     where user_id = $1::text and metric = $2::text and period_start = $3::timestamptz
   ), attempt as (
     insert into usage_counter as c (user_id, metric, period_start, used)
     select $1::text, $2::text, $3::timestamptz, $4::integer
     where $5::integer is null or coalesce((select used from seen), 0) + $4::integer <= $5::integer
     on conflict (user_id, metric, period_start) do update
       set used = c.used + excluded.used, updated_at = now()
       where $5::integer is null or c.used + excluded.used <= $5::integer
     returning used
   )
   select (select used from attempt) as used, coalesce((select used from seen), 0) as seen${commit}`

type AttemptRow = { used: number | null; seen: number }

/** Inside a caller's transaction: the count commits (or rolls back) with the work it pays for. */
const ADD_IN_TRANSACTION = preparedStatement<AttemptRow>('usage_add', addToCounterSql(''))

/**
 * A count of its own commits asynchronously: `synchronous_commit` off, for this statement's implicit
 * transaction only (set_config with is_local). The commit no longer waits for the WAL flush, which
 * held the counter's row lock and a pooled connection, so more increments go through per second
 * (measured in docs/benchmarks.md). The cost: a database crash can forget the last fraction of a
 * second of counts, so a user might get a call or two beyond the limit once. A count is never corrupted, concurrent calls still cannot pass the
 * limit, and counts taken inside another write stay as durable as that write.
 */
const ADD_ON_ITS_OWN = preparedStatement<AttemptRow>(
  'usage_add_async_commit',
  addToCounterSql(`, set_config('synchronous_commit', 'off', true) as commit_mode`),
)

/** Adds `amount` to the counter in one statement, guarded by `limit` (null = no guard). */
export async function addToCounter(db: Executor, key: CounterKey, amount: number, limit: number | null): Promise<CounterAttempt> {
  const statement = db.isTransaction ? ADD_IN_TRANSACTION : ADD_ON_ITS_OWN
  const { rows } = await db.executeQuery(statement([key.userId, key.metric, key.periodStart, amount, limit]))
  const row = rows[0]!
  return { used: row.used ?? undefined, seen: row.seen }
}

/** One counter's share of a statement that writes several (addToCounters). */
export interface CounterAdd {
  key: CounterKey
  amount: number
  /** null = no guard. */
  limit: number | null
}

// addToCounter's statement for several counters at once (one row each, its own amount and guard),
// committing asynchronously as ADD_ON_ITS_OWN does. The guard on the conflicting update reads the
// row's own limit back from the input: the statement's rows cannot carry it into `excluded`. Rows
// are written (and locked) in key order, so two such statements (from two instances) that share
// counters wait for each other instead of deadlocking.
const ADD_MANY_ON_THEIR_OWN = preparedStatement<AttemptRow>(
  'usage_add_many_async_commit',
  `with input as (
     select * from unnest($1::text[], $2::text[], $3::timestamptz[], $4::integer[], $5::integer[])
       with ordinality as i(user_id, metric, period_start, amount, lim, ord)
   ), seen as (
     select c.user_id, c.metric, c.period_start, c.used
     from usage_counter c join input i using (user_id, metric, period_start)
   ), attempt as (
     insert into usage_counter as c (user_id, metric, period_start, used)
     select i.user_id, i.metric, i.period_start, i.amount
     from input i left join seen s using (user_id, metric, period_start)
     where i.lim is null or coalesce(s.used, 0) + i.amount <= i.lim
     order by i.user_id, i.metric, i.period_start
     on conflict (user_id, metric, period_start) do update
       set used = c.used + excluded.used, updated_at = now()
       where (select i.lim is null or c.used + excluded.used <= i.lim from input i
              where i.user_id = excluded.user_id and i.metric = excluded.metric and i.period_start = excluded.period_start)
     returning c.user_id, c.metric, c.period_start, c.used
   )
   select a.used, coalesce(s.used, 0) as seen, set_config('synchronous_commit', 'off', true) as commit_mode
   from input i
   left join attempt a using (user_id, metric, period_start)
   left join seen s using (user_id, metric, period_start)
   order by i.ord`,
)

/**
 * Adds to several counters in one statement and one commit, each guarded by its own limit; the
 * answers are in the order given. A counter may appear only once (a row is updated once per statement).
 */
export async function addToCounters(db: Executor, adds: readonly CounterAdd[]): Promise<CounterAttempt[]> {
  const { rows } = await db.executeQuery(
    ADD_MANY_ON_THEIR_OWN([
      adds.map((a) => a.key.userId),
      adds.map((a) => a.key.metric),
      adds.map((a) => a.key.periodStart),
      adds.map((a) => a.amount),
      adds.map((a) => a.limit),
    ]),
  )
  return rows.map((row) => ({ used: row.used ?? undefined, seen: row.seen }))
}

export async function readCounter(db: Executor, key: CounterKey): Promise<number> {
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
  db: Executor,
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
