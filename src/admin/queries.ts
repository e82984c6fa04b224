import { sql } from 'kysely'
import type { Executor, Trx } from '../../db/index.js'
import { lockUser, type UserKey } from '../user/queries.js'
import { banColumns, fieldsOf, sessionUserColumns, type UserRow } from '../user/rows.js'
import type { Ban, SessionUser } from '../user/types.js'
import type { Plan } from '../shared/plans.js'
import type { Role } from '../shared/roles.js'
import { exactTime, newestFirst, type PageRequest } from '../shared/pagination.js'
import { effectivePlan } from '../usage/plans.js'
import { countRows } from '../shared/count-rows.js'

export interface UserFilters {
  email?: string
  q?: string
  role?: Role
  plan?: Plan
}

/** A user as admins see them: what the user sees of themselves, and their suspension. */
export type ManagedUser = SessionUser & Ban

const managedUserColumns = [...sessionUserColumns, ...banColumns] as const

const toManagedUser = (row: Pick<UserRow, (typeof managedUserColumns)[number]>): ManagedUser => fieldsOf(row, managedUserColumns)

/** LIKE wildcards in the admin's text are literal characters, not patterns. */
const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

export async function findUsers(
  db: Executor,
  filters: UserFilters,
  page: PageRequest,
): Promise<Array<{ user: ManagedUser; cursorAt: string }>> {
  let query = db.selectFrom('user').select([...managedUserColumns, exactTime('created_at').as('cursor_at')])
  if (filters.email !== undefined) query = query.where('email', '=', filters.email)
  if (filters.q !== undefined) {
    const pattern = `%${escapeLike(filters.q)}%`
    query = query.where((eb) => eb.or([eb('email', 'ilike', pattern), eb('name', 'ilike', pattern)]))
  }
  if (filters.role !== undefined) query = query.where('role', '=', filters.role)
  if (filters.plan !== undefined) query = query.where('plan', '=', filters.plan)
  const rows = await newestFirst(query, page).execute()
  return rows.map((r) => ({ user: toManagedUser(r), cursorAt: r.cursor_at }))
}

/** A search by offset and sort (better-auth's admin plugin's list-users). */
export interface UserSearch {
  /** Text in the field, as `operator` says; `%` and `_` are literal. */
  search?: { field: 'email' | 'name'; operator: 'contains' | 'starts_with' | 'ends_with'; value: string }
  /** Equal to the value. */
  filter?: { field: 'role'; value: Role } | { field: 'plan'; value: Plan } | { field: 'banned'; value: boolean }
  sort: { field: 'createdAt' | 'updatedAt' | 'email' | 'name'; direction: 'asc' | 'desc' }
  limit: number
  offset: number
}

const SORT_COLUMN = { createdAt: 'created_at', updatedAt: 'updated_at', email: 'email', name: 'name' } as const
const LIKE = {
  contains: (v: string) => `%${v}%`,
  starts_with: (v: string) => `${v}%`,
  ends_with: (v: string) => `%${v}`,
} as const

/** One page of the users the search finds, in its order (ties by id), and how many it finds in all. */
export async function searchUsers(db: Executor, search: UserSearch): Promise<{ users: ManagedUser[]; total: number }> {
  let found = db.selectFrom('user')
  if (search.search) {
    const { field, operator, value } = search.search
    found = found.where(field, 'ilike', LIKE[operator](escapeLike(value)))
  }
  if (search.filter) found = found.where(search.filter.field, '=', search.filter.value as never)
  const { field, direction } = search.sort
  const rows = await found
    .select(managedUserColumns)
    .orderBy(SORT_COLUMN[field], direction)
    .orderBy('id', direction)
    .limit(search.limit)
    .offset(search.offset)
    .execute()
  return { users: rows.map(toManagedUser), total: await countRows(found) }
}

/** The user a session belongs to, by the session's public id. */
export async function ownerOfSession(db: Executor, sessionId: string): Promise<string | undefined> {
  const row = await db.selectFrom('session').select('user_id').where('id', '=', sessionId).executeTakeFirst()
  return row?.user_id
}

/**
 * Locks the member's impersonation session `sessionId` opened by `adminId` with the administrator's
 * session it was opened from, and tells whether `keptTokenHash` is that session's; undefined when
 * there is no such impersonation any more (ended, or with the administrator's session).
 */
export function lockImpersonation(
  trx: Trx,
  impersonation: { userId: string; sessionId: string; adminId: string; keptTokenHash: string | null },
): Promise<{ adminSessionId: string; kept: boolean | null } | undefined> {
  return trx
    .selectFrom('session as i')
    .innerJoin('session as a', 'a.id', 'i.impersonator_session_id')
    .select(['a.id as adminSessionId', sql<boolean | null>`a.token_hash = ${impersonation.keptTokenHash}`.as('kept')])
    .where('i.id', '=', impersonation.sessionId)
    .where('i.user_id', '=', impersonation.userId)
    .where('i.impersonated_by', '=', impersonation.adminId)
    .where('a.user_id', '=', impersonation.adminId)
    .forUpdate()
    .executeTakeFirst()
}

/** Locks the row: concurrent acts on one user (the admin API, the command line) apply one after the other. */
export function findUserForUpdate(trx: Trx, by: UserKey): Promise<ManagedUser | undefined> {
  return lockUser(trx, by, managedUserColumns)
}

export async function findManagedUser(db: Executor, id: string): Promise<ManagedUser | undefined> {
  const row = await db.selectFrom('user').select(managedUserColumns).where('id', '=', id).executeTakeFirst()
  return row && toManagedUser(row)
}

/**
 * What an admin changes on a user: the plan, or the suspension (`banned: false` with both others
 * null lifts it). Never the role: that is changeRole's.
 */
export type ManagedUserChange =
  | { plan: Plan; plan_expires_at: Date | null }
  | { banned: boolean; ban_reason: string | null; ban_expires: Date | null }

export async function updateManagedUser(trx: Trx, id: string, change: ManagedUserChange, now: Date): Promise<ManagedUser> {
  const row = await trx
    .updateTable('user')
    .set({ ...change, updated_at: now })
    .where('id', '=', id)
    .returning(managedUserColumns)
    .executeTakeFirstOrThrow()
  return toManagedUser(row)
}

export interface UserCounts {
  sessions: number
  entries: number
  results: number
  payments: number
}

/** What a user holds in each domain; one sub-select per table, so a new domain adds one line. */
export async function countsFor(db: Executor, userId: string, now: Date): Promise<UserCounts> {
  const row = await db
    .selectNoFrom((eb) => [
      eb
        .selectFrom('session')
        .select(eb.fn.countAll<number>().as('n'))
        .where('user_id', '=', userId)
        .where('expires_at', '>', now)
        .as('sessions'),
      eb.selectFrom('journal_entry').select(eb.fn.countAll<number>().as('n')).where('user_id', '=', userId).as('entries'),
      eb.selectFrom('compatibility_result').select(eb.fn.countAll<number>().as('n')).where('user_id', '=', userId).as('results'),
      eb.selectFrom('payment').select(eb.fn.countAll<number>().as('n')).where('user_id', '=', userId).as('payments'),
    ])
    .executeTakeFirstOrThrow()
  return {
    sessions: Number(row.sessions),
    entries: Number(row.entries),
    results: Number(row.results),
    payments: Number(row.payments),
  }
}

export interface AuditFilters {
  actorId?: string
  targetId?: string
  action?: string
}

export async function findAuditEvents(db: Executor, filters: AuditFilters, page: PageRequest) {
  let query = db
    .selectFrom('audit_event')
    .select(['id', 'at', 'actor_id', 'action', 'target_type', 'target_id', 'ip', 'details', exactTime('at').as('cursor_at')])
  if (filters.actorId !== undefined) query = query.where('actor_id', '=', filters.actorId)
  if (filters.targetId !== undefined) query = query.where('target_id', '=', filters.targetId)
  if (filters.action !== undefined) query = query.where('action', '=', filters.action)
  return newestFirst(query, page, 'at').execute()
}

// Usage analytics: the numbers come straight from the tables. Counts of users and sessions are of
// the current state (`now`); sign-ups, usage and payments are of the UTC range [from, toExclusive).

export async function countUsersByRole(db: Executor): Promise<Array<{ role: Role; n: number }>> {
  const rows = await db
    .selectFrom('user')
    .select(['role', (eb) => eb.fn.countAll<number>().as('n')])
    .groupBy('role')
    .execute()
  return rows.map((r) => ({ role: r.role, n: Number(r.n) }))
}

/** By effective plan: a paid plan that lapsed at `now` counts as free. */
export async function countUsersByPlan(db: Executor, now: Date): Promise<Array<{ plan: Plan; n: number }>> {
  // Counted by stored plan and expiry, then summed by effectivePlan: the lapse rule lives there
  // only, not again in SQL. One row per distinct expiry, so at most one per paying user.
  const rows = await db
    .selectFrom('user')
    .select(['plan', 'plan_expires_at', (eb) => eb.fn.countAll<number>().as('n')])
    .groupBy(['plan', 'plan_expires_at'])
    .execute()
  const byPlan = new Map<Plan, number>()
  for (const r of rows) {
    const plan = effectivePlan({ plan: r.plan, planExpiresAt: r.plan_expires_at }, now)
    byPlan.set(plan, (byPlan.get(plan) ?? 0) + Number(r.n))
  }
  return [...byPlan].map(([plan, n]) => ({ plan, n }))
}

/** Sign-ups per UTC day ('YYYY-MM-DD'), days without one left out. */
export async function countSignupsPerDay(db: Executor, from: Date, toExclusive: Date): Promise<Map<string, number>> {
  const signupDay = sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')`
  const rows = await db
    .selectFrom('user')
    .select([signupDay.as('day'), (eb) => eb.fn.countAll<number>().as('n')])
    .where('created_at', '>=', from)
    .where('created_at', '<', toExclusive)
    .groupBy(signupDay)
    .execute()
  return new Map(rows.map((r) => [r.day, Number(r.n)]))
}

export async function countActiveSessions(db: Executor, now: Date): Promise<number> {
  return countRows(db.selectFrom('session').where('expires_at', '>', now))
}

/**
 * Usage totals per (metric, period), ordered by both. A metric's counters count from its own
 * `from` (the start of the period that contains the range's first day) up to `toExclusive`.
 */
export async function sumUsage(
  db: Executor,
  metrics: ReadonlyArray<{ metric: string; from: Date }>,
  toExclusive: Date,
): Promise<Array<{ metric: string; periodStart: Date; total: number; users: number }>> {
  const rows = await db
    .selectFrom('usage_counter')
    .select([
      'metric',
      'period_start',
      (eb) => eb.fn.sum<number>('used').as('total'),
      (eb) => eb.fn.count<number>('user_id').distinct().as('users'),
    ])
    .where((eb) =>
      eb.or(
        metrics.map((m) =>
          eb.and([eb('metric', '=', m.metric), eb('period_start', '>=', m.from), eb('period_start', '<', toExclusive)]),
        ),
      ),
    )
    .groupBy(['metric', 'period_start'])
    .orderBy('metric')
    .orderBy('period_start')
    .execute()
  return rows.map((r) => ({ metric: r.metric, periodStart: r.period_start, total: Number(r.total), users: Number(r.users) }))
}

/** Paid payments per product by the time they were granted (refunded ones are no longer revenue). */
export async function sumPaidPayments(
  db: Executor,
  from: Date,
  toExclusive: Date,
): Promise<Array<{ product: string; count: number; revenueIdr: number }>> {
  const paidAt = sql<Date>`coalesce(granted_at, updated_at)`
  const rows = await db
    .selectFrom('payment')
    .select(['product', (eb) => eb.fn.countAll<number>().as('n'), (eb) => eb.fn.sum<number>('amount').as('revenue')])
    .where('status', '=', 'paid')
    .where(paidAt, '>=', from)
    .where(paidAt, '<', toExclusive)
    .groupBy('product')
    .orderBy('product')
    .execute()
  return rows.map((r) => ({ product: r.product, count: Number(r.n), revenueIdr: Number(r.revenue) }))
}
