// SQL of the payment domain. Every status change is one compare-and-set UPDATE.
import { sql } from 'kysely'
import type { Executor, Trx } from '../../db/index.js'
import type { Plan } from '../shared/plans.js'
import { newestFirst, type PageRequest } from '../shared/pagination.js'
import type { PaymentRow, PaymentStatus, Provider } from './tables.js'
import { ownRow } from '../shared/own-row.js'

type NewPayment = {
  id: string
  userId: string
  product: string
  amount: number
  currency: string
  provider: Provider
  resultId: string | null
  returnUrl: string
  now: Date
  expiresAt: Date
}

export async function insertPayment(db: Executor, p: NewPayment): Promise<void> {
  await db
    .insertInto('payment')
    .values({
      id: p.id,
      user_id: p.userId,
      product: p.product,
      amount: p.amount,
      currency: p.currency,
      status: 'pending',
      provider: p.provider,
      provider_ref: null,
      result_id: p.resultId,
      return_url: p.returnUrl,
      created_at: p.now,
      updated_at: p.now,
      expires_at: p.expiresAt,
    })
    .execute()
}

export async function setProviderRef(db: Executor, id: string, providerRef: string, now: Date): Promise<void> {
  await db.updateTable('payment').set({ provider_ref: providerRef, updated_at: now }).where('id', '=', id).execute()
}

export async function findPayment(db: Executor, id: string): Promise<PaymentRow | undefined> {
  return db.selectFrom('payment').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function findUserPayment(db: Executor, userId: string, id: string): Promise<PaymentRow | undefined> {
  return db.selectFrom('payment').selectAll().where(ownRow({ id, userId })).executeTakeFirst()
}

/** The one way a status changes: only from the status the caller saw. Undefined = someone else moved it first. */
export async function compareAndSetStatus(
  db: Executor,
  id: string,
  from: PaymentStatus,
  to: PaymentStatus,
  now: Date,
): Promise<PaymentRow | undefined> {
  return db
    .updateTable('payment')
    .set({ status: to, updated_at: now })
    .where('id', '=', id)
    .where('status', '=', from)
    .returningAll()
    .executeTakeFirst()
}

/** Marks a payment granted; the database numbers the grant (`grant_seq`, migration 0017). */
export async function setGrantedAt(db: Executor, id: string, grantedAt: Date, planExpiresAt: Date | null): Promise<void> {
  await db
    .updateTable('payment')
    .set({ granted_at: grantedAt, granted_plan_expires_at: planExpiresAt })
    .where('id', '=', id)
    .execute()
}

/**
 * Every plan purchase of the user that was granted (paid, or refunded since), in the order granted:
 * `grant_seq`, drawn after the user row's lock (grants from before it was kept come first).
 */
export async function planGrantsOf(db: Executor, userId: string, products: string[]) {
  return db
    .selectFrom('payment')
    .select(['id', 'product', 'status', 'granted_plan_expires_at'])
    .where('user_id', '=', userId)
    .where('granted_at', 'is not', null)
    .where('product', 'in', products)
    .orderBy('grant_seq', (o) => o.asc().nullsFirst())
    .orderBy('granted_at')
    .orderBy('id')
    .execute()
}

/** True when this (provider, event key) is new; false for a redelivery. Same transaction as its effect. */
export async function recordWebhookEvent(
  db: Executor,
  e: { id: string; provider: Provider; eventKey: string; eventType: string; paymentId: string | null },
): Promise<boolean> {
  const inserted = await db
    .insertInto('webhook_event')
    .values({ id: e.id, provider: e.provider, event_key: e.eventKey, event_type: e.eventType, payment_id: e.paymentId })
    .onConflict((oc) => oc.columns(['provider', 'event_key']).doNothing())
    .returning('id')
    .executeTakeFirst()
  return inserted !== undefined
}

export async function listUserPayments(db: Executor, userId: string, page: PageRequest): Promise<PaymentRow[]> {
  return newestFirst(db.selectFrom('payment').selectAll().where('user_id', '=', userId), page).execute()
}

export async function findUserPlan(db: Executor, userId: string) {
  return db.selectFrom('user').select(['plan', 'plan_expires_at']).where('id', '=', userId).executeTakeFirst()
}

export async function setUserPlan(db: Executor, userId: string, plan: Plan, expiresAt: Date | null, now: Date): Promise<void> {
  await db.updateTable('user').set({ plan, plan_expires_at: expiresAt, updated_at: now }).where('id', '=', userId).execute()
}

export async function isResultUnlocked(db: Executor, resultId: string): Promise<boolean> {
  const row = await db
    .selectFrom('compatibility_result')
    .select('deep_insights_unlocked')
    .where('id', '=', resultId)
    .executeTakeFirst()
  return row?.deep_insights_unlocked === true
}

/**
 * Runs `work` under a savepoint of the caller's transaction: if it throws, its writes are rolled
 * back and the transaction goes on.
 */
export async function underSavepoint<T>(trx: Trx, work: () => Promise<T>): Promise<T> {
  await sql`savepoint payment_grant`.execute(trx)
  try {
    const result = await work()
    await sql`release savepoint payment_grant`.execute(trx)
    return result
  } catch (err) {
    await sql`rollback to savepoint payment_grant`.execute(trx)
    throw err
  }
}
