// What a paid payment gives and what a refund takes back, always inside the transition's transaction.
import type { Trx } from '../../db/index.js'
import type { Plan } from '../shared/plans.js'
import { grantDeepInsights, revokeDeepInsights } from '../compatibility/service.js'
import { AppError } from '../shared/errors.js'
import { effectivePlan } from '../usage/plans.js'
import { PLAN_DAYS, PRODUCT_TABLE, PRODUCTS, isProduct } from './products.js'
import { lockUser } from '../user/queries.js'
import { planGrantsOf, setUserPlan, underSavepoint } from './queries.js'
import type { PaymentRow } from './tables.js'

type PaidPlan = Exclude<Plan, 'free'>
const DAY_MS = 24 * 60 * 60 * 1000

type GrantOutcome =
  | { granted: true; details: Record<string, unknown>; planExpiresAt?: Date | null }
  | { granted: false; reason: string }

/**
 * Plan days: 30 days from the later of now and the current expiry when the user already has this
 * plan, else 30 days from now (an upgrade from premium starts premium_plus now; the remaining
 * premium days are not carried over). premium bought while premium_plus is active grants nothing
 * (checkout refuses it; only a race gets here) and is flagged for a refund.
 */
async function grantPlan(trx: Trx, userId: string, plan: PaidPlan, now: Date): Promise<GrantOutcome> {
  const user = await lockUser(trx, { id: userId }, ['plan', 'plan_expires_at'])
  if (!user) return { granted: false, reason: 'user_deleted' }
  const active = effectivePlan(user, now)
  if (plan === 'premium' && active === 'premium_plus') return { granted: false, reason: 'premium_plus_active' }
  if (active === plan && user.planExpiresAt === null) {
    return { granted: true, details: { plan, planExpiresAt: null, note: 'plan does not expire' } }
  }
  const from = active === plan && user.planExpiresAt ? Math.max(now.getTime(), user.planExpiresAt.getTime()) : now.getTime()
  const expiresAt = new Date(from + PLAN_DAYS * DAY_MS)
  await setUserPlan(trx, userId, plan, expiresAt, now)
  return {
    granted: true,
    details: { plan, previousPlan: user.plan, previousExpiresAt: user.planExpiresAt, planExpiresAt: expiresAt },
    planExpiresAt: expiresAt,
  }
}

const PLAN_PRODUCTS = PRODUCTS.filter((p) => PRODUCT_TABLE[p].plan !== null)

/**
 * Whether the user's plan still comes from this payment's grant: its run (grants of one plan, each
 * 30 days on top of the one before) is the latest, and the expiry is where that run ends less 30
 * days for each other refund in it. An upgrade, a lapse and a new purchase, or an admin's change
 * since all break that: those days are not this payment's to take back. A payment granted before
 * its expiry was recorded (migration 0012) is judged by the plan's name alone.
 */
async function planStillFrom(trx: Trx, payment: PaymentRow & { user_id: string }, current: Date): Promise<boolean> {
  if (!payment.granted_plan_expires_at) return true
  // The run the latest grant belongs to: a grant that does not stack on the one before starts a new run.
  let run: { id: string; plan: Plan | null; status: string; end: number | null }[] = []
  for (const g of await planGrantsOf(trx, payment.user_id, PLAN_PRODUCTS)) {
    const grant = {
      id: g.id,
      plan: isProduct(g.product) ? PRODUCT_TABLE[g.product].plan : null,
      status: g.status,
      end: g.granted_plan_expires_at?.getTime() ?? null,
    }
    const prev = run.at(-1)
    const stacks =
      prev !== undefined && prev.plan === grant.plan && prev.end !== null && grant.end === prev.end + PLAN_DAYS * DAY_MS
    if (stacks) run.push(grant)
    else run = [grant]
  }
  if (!run.some((g) => g.id === payment.id)) return false
  const otherRefunds = run.filter((g) => g.id !== payment.id && g.status === 'refunded').length
  return current.getTime() === run.at(-1)!.end! - otherRefunds * PLAN_DAYS * DAY_MS
}

/**
 * A refund shortens the plan by the days it bought, back to free if nothing is left; only while the
 * plan still comes from this payment (planStillFrom), else it is left alone.
 */
async function revokePlan(
  trx: Trx,
  payment: PaymentRow & { user_id: string },
  plan: PaidPlan,
  now: Date,
): Promise<Record<string, unknown>> {
  const user = await lockUser(trx, { id: payment.user_id }, ['plan', 'plan_expires_at'])
  if (!user || user.plan !== plan || user.planExpiresAt === null || !(await planStillFrom(trx, payment, user.planExpiresAt))) {
    return { plan: user?.plan ?? null, changed: false }
  }
  const shortened = new Date(user.planExpiresAt.getTime() - PLAN_DAYS * DAY_MS)
  if (shortened.getTime() <= now.getTime()) {
    await setUserPlan(trx, payment.user_id, 'free', null, now)
    return { plan: 'free', changed: true }
  }
  await setUserPlan(trx, payment.user_id, plan, shortened, now)
  return { plan, planExpiresAt: shortened, changed: true }
}

/**
 * Runs the grant under a savepoint: a refused grant (the result was unlocked by another payment, a
 * 409 from the compatibility service) must not abort the transition, because the money did move.
 */
export async function grantFor(trx: Trx, payment: PaymentRow, now: Date): Promise<GrantOutcome> {
  if (!payment.user_id) return { granted: false, reason: 'user_deleted' }
  if (!isProduct(payment.product)) return { granted: false, reason: 'unknown_product' }
  const plan = PRODUCT_TABLE[payment.product].plan
  if (!plan && !payment.result_id) return { granted: false, reason: 'no_result' }
  const userId = payment.user_id
  try {
    return await underSavepoint(trx, async (): Promise<GrantOutcome> => {
      if (plan) return grantPlan(trx, userId, plan, now)
      await grantDeepInsights(trx, { userId, resultId: payment.result_id!, paymentId: payment.id, now })
      return { granted: true, details: { resultId: payment.result_id } }
    })
  } catch (err) {
    if (err instanceof AppError && (err.status === 409 || err.status === 404)) {
      return { granted: false, reason: err.status === 409 ? 'conflict' : 'result_not_found' }
    }
    throw err
  }
}

export async function revokeFor(trx: Trx, payment: PaymentRow, now: Date): Promise<Record<string, unknown>> {
  if (!payment.granted_at || !isProduct(payment.product)) return { revoked: false }
  const plan = PRODUCT_TABLE[payment.product].plan
  if (plan) {
    if (!payment.user_id) return { revoked: false }
    return { revoked: true, ...(await revokePlan(trx, { ...payment, user_id: payment.user_id }, plan, now)) }
  }
  await revokeDeepInsights(trx, { paymentId: payment.id, now })
  return { revoked: true, resultId: payment.result_id }
}
