// Compatibility results and their paid deep insights. The grant/revoke pair is the contract with
// the payments domain: both run inside the caller's transaction, next to the payment's transition.
import type { FastifyInstance } from 'fastify'
import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../../db/schema.js'
import { json } from '../../db/index.js'
import type { SessionUser } from '../auth/session/sessions.js'
import { AppError, conflict, notFound } from '../shared/errors.js'
import { newId } from '../shared/ids.js'
import { byCreatedAt, toPage, type Page } from '../shared/pagination.js'
import { authorizeRead } from '../shared/moderation.js'
import { todayUtc } from '../journal/schemas.js'
import { effectivePlan } from '../usage/plans.js'
import { consumeUsage } from '../usage/service.js'
import {
  activePurchaseOf,
  findResult,
  insertResult,
  listResultsOf,
  lockResult,
  ownsResult,
  purchaseByPayment,
  saveOwnDeepInsights,
  setUnlocked,
} from './queries.js'
import type { CreateResultInput, ListResultsInput, ResultJson, ResultListItemJson } from './schemas.js'
import type { CompatibilityResultRow } from './tables.js'

const RESULT = 'Compatibility result'

function toListItemJson(row: CompatibilityResultRow): ResultListItemJson {
  return {
    id: row.id,
    userId: row.user_id,
    partner: row.partner,
    systems: row.systems,
    score: row.score,
    summary: row.summary,
    deepInsightsUnlocked: row.deep_insights_unlocked,
    paymentId: row.payment_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }
}

/** Stored deep insights stay hidden while the result is locked (never paid, or refunded). */
export function toResultJson(row: CompatibilityResultRow): ResultJson {
  return { ...toListItemJson(row), deepInsights: row.deep_insights_unlocked ? row.deep_insights : null }
}

const paymentRequired = (resultId: string) =>
  new AppError(402, 'PAYMENT_REQUIRED', 'Deep insights of this result are not paid for', {
    data: { product: 'deep_insights', resultId },
  })

export async function createResult(app: FastifyInstance, user: SessionUser, input: CreateResultInput): Promise<ResultJson> {
  const now = app.clock.now()
  if (input.partner.birthDate > todayUtc(now)) {
    throw new AppError(400, 'VALIDATION_ERROR', 'Invalid body.partner.birthDate: in the future', {
      data: { issues: [{ path: 'body.partner.birthDate', message: 'Must not be in the future' }] },
    })
  }
  const row = await app.db.transaction().execute(async (trx) => {
    await consumeUsage(trx, user, 'compatibilityChecks', 1, now)
    return insertResult(trx, {
      id: newId(),
      user_id: user.id,
      partner: json(input.partner),
      systems: json(input.systems),
      score: input.score,
      summary: json(input.summary),
      created_at: now,
      updated_at: now,
    })
  })
  return toResultJson(row)
}

export async function readResult(app: FastifyInstance, viewer: SessionUser, id: string, ip: string): Promise<ResultJson> {
  const row = await findResult(app.db, id)
  if (!row) throw notFound(RESULT)
  await authorizeRead(app, viewer, {
    ownerId: row.user_id,
    targetType: 'compatibility_result',
    targetId: row.id,
    action: 'compatibility.result.read_by_admin',
    what: RESULT,
  }, ip)
  return toResultJson(row)
}

export async function listResults(app: FastifyInstance, user: SessionUser, query: ListResultsInput): Promise<Page<ResultListItemJson>> {
  const rows = await listResultsOf(app.db, user.id, query)
  return toPage(rows, query.limit, toListItemJson, byCreatedAt)
}

/**
 * Unlocks with an active purchase for this result, or with an effective premium_plus plan.
 * The purchase on record decides, never the paymentId the client sends, and its payment id is
 * the one recorded. Unlocking an unlocked result changes nothing.
 */
export async function unlockDeepInsights(app: FastifyInstance, user: SessionUser, id: string): Promise<ResultJson> {
  const now = app.clock.now()
  const row = await app.db.transaction().execute(async (trx) => {
    const result = await lockResult(trx, id)
    if (!result || result.user_id !== user.id) throw notFound(RESULT)
    if (result.deep_insights_unlocked) return result
    const purchase = await activePurchaseOf(trx, id)
    if (purchase) return setUnlocked(trx, id, true, purchase.payment_id, now)
    if (effectivePlan(user, now) === 'premium_plus') return setUnlocked(trx, id, true, null, now)
    throw paymentRequired(id)
  })
  return toResultJson(row)
}

export async function saveDeepInsights(
  app: FastifyInstance,
  user: SessionUser,
  id: string,
  content: Record<string, unknown>,
): Promise<ResultJson> {
  const row = await saveOwnDeepInsights(app.db, user.id, id, json(content), app.clock.now())
  if (row) return toResultJson(row)
  if (await ownsResult(app.db, user.id, id)) throw paymentRequired(id)
  throw notFound(RESULT)
}

/** Throws 404 unless the result exists and is the user's: payments validate resultId at checkout. */
export async function assertResultOwned(db: Kysely<Database> | Transaction<Database>, userId: string, resultId: string): Promise<void> {
  if (!(await ownsResult(db, userId, resultId))) throw notFound(RESULT)
}

/**
 * Grants a paid deep_insights purchase inside the caller's transaction: records the active
 * purchase and unlocks the result. Granting the same payment again changes nothing. Throws 409
 * when the result is not the user's, the payment was revoked or used for another result, or
 * another payment already unlocked this result.
 */
export async function grantDeepInsights(
  trx: Transaction<Database>,
  input: { userId: string; resultId: string; paymentId: string | null; now: Date },
): Promise<void> {
  const { userId, resultId, paymentId, now } = input
  const result = await lockResult(trx, resultId)
  if (!result || result.user_id !== userId) throw conflict('The result does not belong to the paying user')

  if (paymentId !== null) {
    const earlier = await purchaseByPayment(trx, paymentId)
    if (earlier) {
      if (earlier.result_id !== resultId) throw conflict('This payment already unlocked another result')
      if (earlier.status !== 'active') throw conflict('This payment was revoked')
      await setUnlocked(trx, resultId, true, paymentId, now)
      return
    }
  }
  const active = await activePurchaseOf(trx, resultId)
  if (active) {
    if (paymentId === null && active.payment_id === null) {
      await setUnlocked(trx, resultId, true, null, now)
      return
    }
    throw conflict('Deep insights of this result are already unlocked by another payment')
  }
  await trx
    .insertInto('deep_insights_purchase')
    .values({ id: newId(), user_id: userId, result_id: resultId, payment_id: paymentId, status: 'active' })
    .execute()
  await setUnlocked(trx, resultId, true, paymentId, now)
}

/**
 * Takes a purchase back (refund) inside the caller's transaction and locks the result again; the
 * stored deep insights stay but are hidden. A premium_plus user may unlock it again through the
 * unlock route. Revoking an unknown or already revoked payment changes nothing.
 */
export async function revokeDeepInsights(trx: Transaction<Database>, input: { paymentId: string; now: Date }): Promise<void> {
  const purchase = await purchaseByPayment(trx, input.paymentId)
  if (!purchase || purchase.status !== 'active') return
  // Same lock order as grant and unlock (result first), so concurrent calls cannot deadlock.
  await lockResult(trx, purchase.result_id)
  const revoked = await trx
    .updateTable('deep_insights_purchase')
    .set({ status: 'revoked', revoked_at: input.now })
    .where('id', '=', purchase.id)
    .where('status', '=', 'active')
    .returning('result_id')
    .executeTakeFirst()
  if (revoked) await setUnlocked(trx, revoked.result_id, false, null, input.now)
}
