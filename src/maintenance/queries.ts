import type { Executor } from '../../db/index.js'

/**
 * Deletes up to `batchSize` rows of `table` expired at `now` (expires_at <= now, as the app reads
 * them) and returns how many. Rows a concurrent run holds are skipped (`for update skip locked`), so
 * several instances neither wait for each other nor delete a row twice.
 */
export async function deleteExpiredBatch(
  db: Executor,
  table: 'session' | 'verification',
  now: Date,
  batchSize: number,
): Promise<number> {
  // The batch is a MATERIALIZED CTE, not `id in (select ... limit n for update skip locked)`: the
  // planner may rescan such a subquery once per outer row (nested-loop semi-join), and with skip
  // locked every rescan picks other rows, so one statement could delete far more than the batch.
  const result = await db
    .with(
      (cte) => cte('batch').materialized(),
      (q) =>
        q
          .selectFrom(table)
          .select('id')
          .where('expires_at', '<=', now)
          .orderBy('expires_at')
          .limit(batchSize)
          .forUpdate()
          .skipLocked(),
    )
    .deleteFrom(table)
    .where('id', 'in', (eb) => eb.selectFrom('batch').select('batch.id'))
    .executeTakeFirst()
  return Number(result.numDeletedRows)
}
