// Compatibility results and their paid deep insights. The grant/revoke pair is the contract with
// the payments domain: both run inside the caller's transaction, next to the payment's transition.
import { json, type DB, type Executor, type Trx } from '../../db/index.js'
import type { SessionUser } from '../user/types.js'
import type { Clock } from '../shared/clock.js'
import { signedIn, type RequestContext } from '../shared/context.js'
import { todayUtc } from '../shared/dates.js'
import { AppError, conflict, notFound } from '../shared/errors.js'
import { newId } from '../shared/ids.js'
import { authorizeRead, type Viewer } from '../shared/moderation.js'
import { byCreatedAt, toPage, type Page } from '../shared/pagination.js'
import { invalidInput } from '../shared/validation.js'
import { effectivePlan } from '../usage/plans.js'
import { countedAct } from '../usage/service.js'
import {
  activePurchaseOf,
  findResult,
  insertPurchase,
  insertResult,
  listResultsOf,
  lockResult,
  ownsResult,
  purchaseByPayment,
  revokePurchase,
  saveOwnDeepInsights,
  setUnlocked,
} from './queries.js'
import type { CreateResultInput, ListResultsInput } from './schemas.js'
import type { CompatibilityResultRow, Partner, System } from './tables.js'

export interface CompatibilityDeps {
  db: DB
  clock: Clock
}

/** A result as a list shows it: never its deep insights. */
export interface ResultSummary {
  id: string
  userId: string
  partner: Partner
  systems: System[]
  score: number
  summary: Record<string, unknown>
  deepInsightsUnlocked: boolean
  paymentId: string | null
  createdAt: Date
  updatedAt: Date
}

export interface CompatibilityResult extends ResultSummary {
  /** null unless unlocked: stored insights stay hidden while the result is locked (never paid, or refunded). */
  deepInsights: Record<string, unknown> | null
}

const RESULT = 'Compatibility result'

const toSummary = (row: CompatibilityResultRow): ResultSummary => ({
  id: row.id,
  userId: row.user_id,
  partner: row.partner,
  systems: row.systems,
  score: row.score,
  summary: row.summary,
  deepInsightsUnlocked: row.deep_insights_unlocked,
  paymentId: row.payment_id,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
})

const toResult = (row: CompatibilityResultRow): CompatibilityResult => ({
  ...toSummary(row),
  deepInsights: row.deep_insights_unlocked ? row.deep_insights : null,
})

const paymentRequired = (resultId: string) =>
  new AppError(402, 'PAYMENT_REQUIRED', 'Deep insights of this result are not paid for', {
    data: { product: 'deep_insights', resultId },
  })

/** A result of the signed-in `user`, whose plan decides whether it is within the month's checks. */
export async function createResult(
  deps: CompatibilityDeps,
  _ctx: RequestContext,
  user: SessionUser,
  input: CreateResultInput,
): Promise<CompatibilityResult> {
  const now = deps.clock.now()
  if (input.partner.birthDate > todayUtc(now)) throw invalidInput(['partner', 'birthDate'], 'Must not be in the future')
  const row = await countedAct(deps.db, user, 'compatibilityChecks', now, (trx) =>
    insertResult(trx, {
      id: newId(),
      user_id: user.id,
      partner: json(input.partner),
      systems: json(input.systems),
      score: input.score,
      summary: json(input.summary),
      created_at: now,
      updated_at: now,
    }),
  )
  return toResult(row)
}

/** The owner's result; any result for an admin or owner `viewer`, audited. */
export async function readResult(
  deps: CompatibilityDeps,
  ctx: RequestContext,
  viewer: Viewer,
  id: string,
): Promise<CompatibilityResult> {
  const read = { targetType: 'compatibility_result', action: 'compatibility.result.read_by_admin', what: RESULT }
  return toResult(await authorizeRead(deps, viewer, await findResult(deps.db, id), read, ctx.ip))
}

export async function listResults(
  deps: CompatibilityDeps,
  ctx: RequestContext,
  query: ListResultsInput,
): Promise<Page<ResultSummary>> {
  const rows = await listResultsOf(deps.db, signedIn(ctx), query)
  return toPage(rows, query.limit, toSummary, byCreatedAt)
}

/**
 * Unlocks with an active purchase for this result, or with an effective premium_plus plan of the
 * signed-in `user`. The purchase on record decides, never the paymentId the client sends, and its
 * payment id is the one recorded. Unlocking an unlocked result changes nothing.
 */
export async function unlockDeepInsights(
  deps: CompatibilityDeps,
  _ctx: RequestContext,
  user: SessionUser,
  id: string,
): Promise<CompatibilityResult> {
  const now = deps.clock.now()
  const row = await deps.db.transaction().execute(async (trx) => {
    const result = await lockResult(trx, id)
    if (!result || result.user_id !== user.id) throw notFound(RESULT)
    if (result.deep_insights_unlocked) return result
    const purchase = await activePurchaseOf(trx, id)
    if (purchase) return setUnlocked(trx, id, true, purchase.payment_id, now)
    if (effectivePlan(user, now) === 'premium_plus') return setUnlocked(trx, id, true, null, now)
    throw paymentRequired(id)
  })
  return toResult(row)
}

export async function saveDeepInsights(
  deps: CompatibilityDeps,
  ctx: RequestContext,
  id: string,
  content: Record<string, unknown>,
): Promise<CompatibilityResult> {
  const userId = signedIn(ctx)
  const row = await saveOwnDeepInsights(deps.db, userId, id, json(content), deps.clock.now())
  if (row) return toResult(row)
  if (await ownsResult(deps.db, userId, id)) throw paymentRequired(id)
  throw notFound(RESULT)
}

/** Throws 404 unless the result exists and is the user's: payments validate resultId at checkout. */
export async function assertResultOwned(db: Executor, userId: string, resultId: string): Promise<void> {
  if (!(await ownsResult(db, userId, resultId))) throw notFound(RESULT)
}

/**
 * Grants a paid deep_insights purchase inside the caller's transaction: records the active
 * purchase and unlocks the result. Granting the same payment again changes nothing. Throws 409
 * when the result is not the user's, the payment was revoked or used for another result, or
 * another payment already unlocked this result.
 */
export async function grantDeepInsights(
  trx: Trx,
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
  await insertPurchase(trx, { id: newId(), user_id: userId, result_id: resultId, payment_id: paymentId, status: 'active' })
  await setUnlocked(trx, resultId, true, paymentId, now)
}

/**
 * Takes a purchase back (refund) inside the caller's transaction and locks the result again; the
 * stored deep insights stay but are hidden. A premium_plus user may unlock it again through the
 * unlock route. Revoking an unknown or already revoked payment changes nothing.
 */
export async function revokeDeepInsights(trx: Trx, input: { paymentId: string; now: Date }): Promise<void> {
  const purchase = await purchaseByPayment(trx, input.paymentId)
  if (purchase?.status !== 'active') return
  // Same lock order as grant and unlock (result first), so concurrent calls cannot deadlock.
  await lockResult(trx, purchase.result_id)
  const resultId = await revokePurchase(trx, purchase.id, input.now)
  if (resultId !== undefined) await setUnlocked(trx, resultId, false, null, input.now)
}
