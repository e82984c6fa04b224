// SQL of compatibility results and their deep-insights purchases.
import { sql, type Insertable } from 'kysely'
import type { Executor, Trx } from '../../db/index.js'
import { newestFirst, type PageRequest } from '../shared/pagination.js'
import type { CompatibilityResultRow, CompatibilityResultTable, DeepInsightsPurchaseTable } from './tables.js'
import { ownRow } from '../shared/own-row.js'

export async function insertResult(db: Executor, values: Insertable<CompatibilityResultTable>): Promise<CompatibilityResultRow> {
  return db.insertInto('compatibility_result').values(values).returningAll().executeTakeFirstOrThrow()
}

export async function findResult(db: Executor, id: string): Promise<CompatibilityResultRow | undefined> {
  return db.selectFrom('compatibility_result').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function ownsResult(db: Executor, userId: string, id: string): Promise<boolean> {
  const row = await db.selectFrom('compatibility_result').select('id').where(ownRow({ id, userId })).executeTakeFirst()
  return Boolean(row)
}

/** The result row, locked until the transaction ends: unlocks and grants of one result serialize. */
export async function lockResult(trx: Trx, id: string): Promise<CompatibilityResultRow | undefined> {
  return trx.selectFrom('compatibility_result').selectAll().where('id', '=', id).forUpdate().executeTakeFirst()
}

export async function setUnlocked(
  trx: Trx,
  id: string,
  unlocked: boolean,
  paymentId: string | null,
  now: Date,
): Promise<CompatibilityResultRow> {
  return trx
    .updateTable('compatibility_result')
    .set({
      deep_insights_unlocked: unlocked,
      ...(paymentId !== null && { payment_id: paymentId }),
      updated_at: now,
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()
}

/** Stores deep insights only on the user's own, unlocked result; undefined otherwise. */
export async function saveOwnDeepInsights(
  db: Executor,
  userId: string,
  id: string,
  content: string,
  now: Date,
): Promise<CompatibilityResultRow | undefined> {
  return db
    .updateTable('compatibility_result')
    .set({ deep_insights: content, updated_at: now })
    .where(ownRow({ id, userId }))
    .where('deep_insights_unlocked', '=', true)
    .returningAll()
    .executeTakeFirst()
}

export async function listResultsOf(db: Executor, userId: string, options: PageRequest): Promise<CompatibilityResultRow[]> {
  const query = db
    .selectFrom('compatibility_result')
    // Deep insights are never read for a list, so a locked result's content cannot leak through it.
    .select([
      'id',
      'user_id',
      'partner',
      'systems',
      'score',
      'summary',
      'deep_insights_unlocked',
      'payment_id',
      'created_at',
      'updated_at',
    ])
    .select(sql<null>`null`.as('deep_insights'))
    .where('user_id', '=', userId)
  return newestFirst(query, options).execute()
}

export async function activePurchaseOf(db: Executor, resultId: string) {
  return db
    .selectFrom('deep_insights_purchase')
    .selectAll()
    .where('result_id', '=', resultId)
    .where('status', '=', 'active')
    .executeTakeFirst()
}

export async function purchaseByPayment(db: Executor, paymentId: string) {
  return db.selectFrom('deep_insights_purchase').selectAll().where('payment_id', '=', paymentId).executeTakeFirst()
}

export async function insertPurchase(trx: Trx, values: Insertable<DeepInsightsPurchaseTable>): Promise<void> {
  await trx.insertInto('deep_insights_purchase').values(values).execute()
}

/** Marks an active purchase revoked; the result id, or undefined when it was no longer active. */
export async function revokePurchase(trx: Trx, id: string, now: Date): Promise<string | undefined> {
  const revoked = await trx
    .updateTable('deep_insights_purchase')
    .set({ status: 'revoked', revoked_at: now })
    .where('id', '=', id)
    .where('status', '=', 'active')
    .returning('result_id')
    .executeTakeFirst()
  return revoked?.result_id
}
