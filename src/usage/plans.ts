// Metrics and the plans' limits: the one table the rest of the service reads. Imports only the
// list of plans (src/shared/plans.ts): the contract (src/contract/) reads these lists too.
import type { Plan } from '../shared/plans.js'

export const METRICS = ['aiMessages', 'compatibilityChecks', 'journalEntries'] as const
export type Metric = (typeof METRICS)[number]
export type Period = 'day' | 'month'

export const METRIC_PERIOD: Record<Metric, Period> = {
  aiMessages: 'day',
  compatibilityChecks: 'month',
  journalEntries: 'day',
}

/** null = unlimited. */
export const PLAN_LIMITS: Record<Plan, Record<Metric, number | null>> = {
  free: { aiMessages: 10, compatibilityChecks: 3, journalEntries: 5 },
  premium: { aiMessages: 200, compatibilityChecks: 30, journalEntries: 50 },
  premium_plus: { aiMessages: null, compatibilityChecks: null, journalEntries: null },
}

/** A paid plan whose expiry has passed counts as free. A paid plan without expiry does not lapse. */
export function effectivePlan(user: { plan: Plan; planExpiresAt: Date | null }, now: Date): Plan {
  if (user.plan === 'free') return 'free'
  if (user.planExpiresAt && user.planExpiresAt.getTime() <= now.getTime()) return 'free'
  return user.plan
}

/** The UTC day or month that contains `now`. */
export function currentPeriod(metric: Metric, now: Date): { start: Date; resetsAt: Date } {
  const y = now.getUTCFullYear()
  const m = now.getUTCMonth()
  if (METRIC_PERIOD[metric] === 'month') {
    return { start: new Date(Date.UTC(y, m, 1)), resetsAt: new Date(Date.UTC(y, m + 1, 1)) }
  }
  const d = now.getUTCDate()
  return { start: new Date(Date.UTC(y, m, d)), resetsAt: new Date(Date.UTC(y, m, d + 1)) }
}
