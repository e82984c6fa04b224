// The ONE path by which a payment changes status: the gateway's state applied to our record with
// compare-and-set updates, the grant or revoke and the audit events in the same transaction.
import type { Trx } from '../../db/index.js'
import { recordAudit } from '../shared/audit.js'
import type { RequestContext } from '../shared/context.js'
import type { GatewayState } from './gateway.js'
import { grantFor, revokeFor } from './grants.js'
import { compareAndSetStatus, findPayment, setGrantedAt } from './queries.js'
import type { PaymentRow, PaymentStatus } from './tables.js'

interface Step {
  from: PaymentStatus
  to: PaymentStatus
  grant: boolean
}

/**
 * The next single transition from our status towards the gateway's. Money that moved wins: a capture
 * after "expired" or "failed" still becomes paid. A refund is only recorded for a paid payment; a
 * refund seen before we recorded the payment (a lost or late capture notice) first records "paid"
 * without granting anything, then "refunded", so the user ends with nothing and the history is true.
 */
function nextStep(current: PaymentStatus, target: PaymentStatus): Step | null {
  switch (target) {
    case 'paid':
      return current === 'pending' || current === 'failed' || current === 'expired'
        ? { from: current, to: 'paid', grant: true }
        : null
    case 'failed':
    case 'expired':
      return current === 'pending' ? { from: current, to: target, grant: false } : null
    case 'refunded':
      if (current === 'paid') return { from: 'paid', to: 'refunded', grant: false }
      return current === 'refunded' ? null : { from: current, to: 'paid', grant: false }
    default:
      return null
  }
}

/** Who asked for the transition: its audit events name ctx.actorId and the source. */
type Source = 'webhook' | 'verify'

/** Applies the gateway's state to our record, one compare-and-set at a time, inside `trx`. */
export async function applyGatewayState(
  trx: Trx,
  ctx: RequestContext,
  source: Source,
  paymentId: string,
  state: GatewayState,
  now: Date,
): Promise<PaymentRow | undefined> {
  // A few rounds at most: pending -> paid -> refunded, plus a retry when a concurrent writer won.
  for (let round = 0; round < 6; round++) {
    const current = await findPayment(trx, paymentId)
    if (!current) return undefined
    const step = nextStep(current.status, state.status)
    if (!step) return current

    if (step.to === 'paid' && (state.amount !== current.amount || state.currency !== current.currency)) {
      ctx.log.warn(
        {
          paymentId,
          expected: { amount: current.amount, currency: current.currency },
          gateway: { amount: state.amount, currency: state.currency },
        },
        'payment amount mismatch: refused',
      )
      await recordAudit(trx, {
        actorId: ctx.actorId,
        action: 'payment.amount_mismatch',
        targetType: 'payment',
        targetId: paymentId,
        ip: ctx.ip,
        details: {
          source,
          provider: current.provider,
          expected: { amount: current.amount, currency: current.currency },
          received: { amount: state.amount, currency: state.currency },
        },
      })
      return current
    }

    const moved = await compareAndSetStatus(trx, paymentId, step.from, step.to, now)
    if (!moved) continue // another request moved it first: decide again from what it left

    let details: Record<string, unknown> = {}
    let result = moved
    if (step.to === 'paid' && step.grant) {
      const outcome = await grantFor(trx, moved, now)
      if (outcome.granted) {
        const planExpiresAt = outcome.planExpiresAt ?? null
        await setGrantedAt(trx, paymentId, now, planExpiresAt)
        result = { ...moved, granted_at: now, granted_plan_expires_at: planExpiresAt }
        details = { granted: true, ...outcome.details }
      } else {
        details = { granted: false, reason: outcome.reason }
        ctx.log.warn({ paymentId, reason: outcome.reason }, 'payment paid but nothing granted: needs a refund')
        await recordAudit(trx, {
          actorId: ctx.actorId,
          action: 'payment.grant_skipped',
          targetType: 'payment',
          targetId: paymentId,
          ip: ctx.ip,
          details: { source, product: moved.product, reason: outcome.reason },
        })
      }
    } else if (step.to === 'refunded') {
      details = await revokeFor(trx, moved, now)
    }
    await recordAudit(trx, {
      actorId: ctx.actorId,
      action: `payment.${step.to}`,
      targetType: 'payment',
      targetId: paymentId,
      ip: ctx.ip,
      details: { source, from: step.from, provider: moved.provider, product: moved.product, amount: moved.amount, ...details },
    })
    if (result.status === state.status) return result
  }
  return findPayment(trx, paymentId)
}
