// The UTC date range of the usage analytics, and the shape of the answer. The numbers themselves
// come from queries.ts; service.ts puts them together.
import type { Plan } from '../shared/plans.js'
import type { Role } from '../shared/roles.js'
import { todayUtc } from '../shared/dates.js'
import { invalidInput } from '../shared/validation.js'
import type { Metric } from '../usage/plans.js'

interface DateRange {
  /** Inclusive UTC calendar dates, YYYY-MM-DD. */
  from: string
  to: string
}

export interface UsageAnalytics {
  range: DateRange
  users: {
    total: number
    byRole: Record<Role, number>
    byPlan: Record<Plan, number>
    signupsPerDay: Array<{ date: string; count: number }>
  }
  activeSessions: number
  usage: Array<{ metric: Metric; period: string; total: number; users: number }>
  payments: { paidCount: number; revenueIdr: number; byProduct: Record<string, { count: number; revenueIdr: number }> }
}

const MAX_RANGE_DAYS = 366
const DEFAULT_RANGE_DAYS = 30
const DAY_MS = 24 * 60 * 60 * 1000

export const startOf = (date: string): Date => new Date(`${date}T00:00:00.000Z`)
export const dayAfter = (date: string): Date => new Date(startOf(date).getTime() + DAY_MS)

export function daysOf(range: DateRange): string[] {
  const days: string[] = []
  for (let t = startOf(range.from).getTime(); t <= startOf(range.to).getTime(); t += DAY_MS) days.push(todayUtc(new Date(t)))
  return days
}

/** The asked range: `to` defaults to today, `from` to the 30 days that end on `to`; at most 366 days. */
export function analyticsRange(query: { from?: string; to?: string }, now: Date): DateRange {
  const to = query.to ?? todayUtc(now)
  const from = query.from ?? todayUtc(new Date(startOf(to).getTime() - (DEFAULT_RANGE_DAYS - 1) * DAY_MS))
  if (from > to) throw invalidInput(['from'], 'must not be after `to`')
  const range = { from, to }
  if (daysOf(range).length > MAX_RANGE_DAYS) throw invalidInput(['from'], `the range is at most ${MAX_RANGE_DAYS} days`)
  return range
}
