// Admin acts on users. Each act and its audit event commit together, with before/after of what
// changed. Nobody changes an owner through the API, grants owner, or changes their own role.
// Who may call these is the routes' ADMIN policy; the acting admin is ctx.actorId.
import type { DB, Executor } from '../../db/index.js'
import { endSessionsOfUser } from '../auth/core/queries.js'
import { forgetKnownDevices } from '../auth/security/queries.js'
import { PLANS, type Plan } from '../shared/plans.js'
import type { Role } from '../shared/roles.js'
import { recordAudit } from '../shared/audit.js'
import type { Clock } from '../shared/clock.js'
import type { RequestContext } from '../shared/context.js'
import { iso } from '../shared/dates.js'
import { forbidden, notFound } from '../shared/errors.js'
import { toPage, type Page, type PageRequest } from '../shared/pagination.js'
import { invalidInput } from '../shared/validation.js'
import { currentPeriod, METRIC_PERIOD, METRICS, type Metric } from '../usage/plans.js'
import { analyticsRange, dayAfter, daysOf, startOf, type UsageAnalytics } from './analytics.js'
import {
  countActiveSessions,
  countSignupsPerDay,
  countsFor,
  countUsersByPlan,
  countUsersByRole,
  findAuditEvents,
  findManagedUser,
  findUserForUpdate,
  findUsers,
  type ManagedUser,
  searchUsers as findUsersBySearch,
  type UserSearch,
  sumPaidPayments,
  sumUsage,
  updateManagedUser,
  type AuditFilters,
  type UserCounts,
  type UserFilters,
} from './queries.js'
import { changeRole } from '../auth/account/roles.js'
import { deletePasskeysOf } from '../auth/passkey/queries.js'
import type { SecurityNotices } from '../auth/security/notices.js'
import { deleteTwoFactor, setTwoFactorEnabled } from '../auth/two-factor/queries.js'

export interface AdminDeps {
  db: DB
  clock: Clock
  /** A user whose second factor an administrator removed is mailed a notice. */
  notices: SecurityNotices
}

export interface AdminUser {
  user: ManagedUser
  counts: UserCounts
}

export interface AuditEvent {
  id: string
  at: Date
  actorId: string | null
  action: string
  targetType: string | null
  targetId: string | null
  ip: string | null
  details: Record<string, unknown>
}

const ownerUnchangeable = () => forbidden('An owner cannot be changed through the API')

/** Nobody ends an owner's sessions but the owner. */
export function assertMayEndSessionsOf(target: Pick<ManagedUser, 'id' | 'role'>, ctx: RequestContext): void {
  if (target.role === 'owner' && target.id !== ctx.actorId) throw ownerUnchangeable()
}

/** The audit event of an admin's act on (or look at) one user's account. */
const auditUserChange = (db: Executor, ctx: RequestContext, action: string, id: string, details?: Record<string, unknown>) =>
  recordAudit(db, { actorId: ctx.actorId, action, targetType: 'user', targetId: id, ip: ctx.ip, details })

/** A listing of users is a moderation read: what was asked and how many came back. */
const auditUsersListed = (db: Executor, ctx: RequestContext, details: Record<string, unknown>) =>
  recordAudit(db, { actorId: ctx.actorId, action: 'admin.users.listed', targetType: 'user', ip: ctx.ip, details })

export async function listUsers(
  deps: AdminDeps,
  ctx: RequestContext,
  filters: UserFilters,
  page: PageRequest,
): Promise<Page<ManagedUser>> {
  return deps.db.transaction().execute(async (trx) => {
    const rows = await findUsers(trx, filters, page)
    const result = toPage(
      rows,
      page.limit,
      (r) => r.user,
      (r) => ({ at: r.cursorAt, id: r.user.id }),
    )
    await auditUsersListed(trx, ctx, { filters: { ...filters }, returned: result.items.length })
    return result
  })
}

/** The same listing by offset and sort (better-auth's admin plugin's list-users), audited alike. */
export async function searchUsers(
  deps: AdminDeps,
  ctx: RequestContext,
  search: UserSearch,
): Promise<{ users: ManagedUser[]; total: number }> {
  return deps.db.transaction().execute(async (trx) => {
    const found = await findUsersBySearch(trx, search)
    await auditUsersListed(trx, ctx, { search: { ...search }, returned: found.users.length })
    return found
  })
}

/** A moderation read of one user: audited like every read of another user's data. */
export async function getUser(deps: AdminDeps, ctx: RequestContext, id: string): Promise<AdminUser> {
  return deps.db.transaction().execute(async (trx) => {
    const user = await findManagedUser(trx, id)
    if (!user) throw notFound('User')
    const counts = await countsFor(trx, id, deps.clock.now())
    await auditUserChange(trx, ctx, 'admin.user.viewed', id)
    return { user, counts }
  })
}

export async function setUserRole(
  deps: AdminDeps,
  ctx: RequestContext,
  id: string,
  role: Role,
  via: string,
): Promise<ManagedUser> {
  // owner is granted only from the command line: an API session that leaks cannot mint one.
  if (role === 'owner') throw forbidden('The owner role cannot be granted through the API')
  if (id === ctx.actorId) throw forbidden('You cannot change your own role')
  return deps.db.transaction().execute(async (trx) => {
    const before = await findUserForUpdate(trx, { id })
    if (!before) throw notFound('User')
    if (before.role === 'owner') throw ownerUnchangeable()
    // changeRole ends a demoted admin's sessions and audits the act, a no-op included.
    const now = deps.clock.now()
    await changeRole(trx, { userId: id, from: before.role, to: role, actorId: ctx.actorId, ip: ctx.ip, via, now })
    return before.role === role ? before : { ...before, role, updatedAt: now }
  })
}

export async function setUserPlan(
  deps: AdminDeps,
  ctx: RequestContext,
  id: string,
  change: { plan: Plan; expiresAt?: string },
  via: string,
): Promise<ManagedUser> {
  // As for roles: an admin's own plan is another admin's decision (an admin must not grant themselves a paid plan).
  if (id === ctx.actorId) throw forbidden('You cannot change your own plan')
  const { plan } = change
  const now = deps.clock.now()
  const expiry = change.expiresAt === undefined ? null : new Date(change.expiresAt)
  if (expiry && expiry.getTime() <= now.getTime()) throw invalidInput(['expiresAt'], 'must be in the future')
  if (expiry && plan === 'free') throw invalidInput(['expiresAt'], 'the free plan does not expire')
  return deps.db.transaction().execute(async (trx) => {
    const before = await findUserForUpdate(trx, { id })
    if (!before) throw notFound('User')
    if (before.role === 'owner') throw ownerUnchangeable()
    const after = await updateManagedUser(trx, id, { plan, plan_expires_at: expiry }, now)
    await auditUserChange(trx, ctx, 'admin.user.plan_changed', id, {
      via,
      before: { plan: before.plan, planExpiresAt: iso(before.planExpiresAt) },
      after: { plan: after.plan, planExpiresAt: iso(after.planExpiresAt) },
    })
    return after
  })
}

export async function revokeUserSessions(deps: AdminDeps, ctx: RequestContext, id: string): Promise<{ revoked: number }> {
  return deps.db.transaction().execute(async (trx) => {
    const target = await findUserForUpdate(trx, { id })
    if (!target) throw notFound('User')
    assertMayEndSessionsOf(target, ctx)
    const revoked = await endSessionsOfUser(trx, id)
    await auditUserChange(trx, ctx, 'admin.user.sessions_revoked', id, {
      before: { sessions: revoked },
      after: { sessions: 0 },
      revoked,
    })
    return { revoked }
  })
}

/**
 * Recovery without the second factor (docs/http-contract.md, "Recovery"): a user who lost their
 * authenticator and backup codes, or whose only passkey is someone else's, asks an administrator,
 * who has checked who they are by other means. Their TOTP secret, backup codes, trusted devices and
 * passkeys go, and every session of the account ends (one may be whoever added a passkey); they are
 * mailed a notice of each removal. Nobody removes an owner's (the command line's business) or
 * their own (two-factor/disable and delete-passkey do, signed in).
 */
export async function removeUserSecondFactor(
  deps: AdminDeps,
  ctx: RequestContext,
  id: string,
): Promise<{ twoFactorRemoved: boolean; passkeysRemoved: number; sessionsRevoked: number }> {
  if (id === ctx.actorId) throw forbidden('Remove your own second factor from your account, signed in')
  const { result, notices } = await deps.db.transaction().execute(async (trx) => {
    const before = await findUserForUpdate(trx, { id })
    if (!before) throw notFound('User')
    if (before.role === 'owner') throw ownerUnchangeable()
    const now = deps.clock.now()
    const twoFactorRemoved = before.twoFactorEnabled
    const { trustedDevices } = await deleteTwoFactor(trx, id)
    await setTwoFactorEnabled(trx, id, false, now)
    const passkeysRemoved = await deletePasskeysOf(trx, id)
    const sessionsRevoked = await endSessionsOfUser(trx, id)
    await auditUserChange(trx, ctx, 'admin.user.second_factor_removed', id, {
      before: { twoFactorEnabled: twoFactorRemoved, passkeys: passkeysRemoved },
      after: { twoFactorEnabled: false, passkeys: 0 },
      trustedDevicesRevoked: trustedDevices,
      sessionsRevoked,
    })
    const notices = [
      ...(twoFactorRemoved ? [await deps.notices.prepare(trx, ctx, id, 'two_factor_disabled')] : []),
      ...(passkeysRemoved ? [await deps.notices.prepare(trx, ctx, id, 'passkey_removed')] : []),
    ]
    return { result: { twoFactorRemoved, passkeysRemoved, sessionsRevoked }, notices }
  })
  for (const notice of notices) notice()
  return result
}

const banJson = (u: ManagedUser) => ({ banned: u.banned, banReason: u.banReason, banExpiresAt: iso(u.banExpiresAt) })

/**
 * Suspends a user: every session ends in the same transaction, and no sign-in of any kind
 * succeeds (src/auth/core/ban.ts) until the ban is lifted or `expiresAt` passes. Banning again replaces
 * the reason and the expiry. Nobody bans an owner or themselves.
 */
export async function banUser(
  deps: AdminDeps,
  ctx: RequestContext,
  id: string,
  input: { reason: string; expiresAt?: string },
): Promise<AdminUser> {
  if (id === ctx.actorId) throw forbidden('You cannot ban yourself')
  const now = deps.clock.now()
  const expiry = input.expiresAt === undefined ? null : new Date(input.expiresAt)
  if (expiry && expiry.getTime() <= now.getTime()) throw invalidInput(['expiresAt'], 'must be in the future')
  return deps.db.transaction().execute(async (trx) => {
    const before = await findUserForUpdate(trx, { id })
    if (!before) throw notFound('User')
    if (before.role === 'owner') throw forbidden('An owner cannot be banned')
    const user = await updateManagedUser(trx, id, { banned: true, ban_reason: input.reason, ban_expires: expiry }, now)
    const sessionsRevoked = await endSessionsOfUser(trx, id)
    // Its browsers keep no allowance of a known device, should the ban be lifted (auth/security/devices.ts).
    await forgetKnownDevices(trx, id)
    await auditUserChange(trx, ctx, 'admin.user.banned', id, { before: banJson(before), after: banJson(user), sessionsRevoked })
    return { user, counts: await countsFor(trx, id, now) }
  })
}

/** Lifts a user's ban (a no-op for a user who is not banned, audited all the same). */
export async function unbanUser(deps: AdminDeps, ctx: RequestContext, id: string): Promise<AdminUser> {
  const now = deps.clock.now()
  return deps.db.transaction().execute(async (trx) => {
    const before = await findUserForUpdate(trx, { id })
    if (!before) throw notFound('User')
    const user = before.banned
      ? await updateManagedUser(trx, id, { banned: false, ban_reason: null, ban_expires: null }, now)
      : before
    await auditUserChange(trx, ctx, 'admin.user.unbanned', id, { via: 'admin', before: banJson(before), after: banJson(user) })
    return { user, counts: await countsFor(trx, id, now) }
  })
}

export async function getUsageAnalytics(
  deps: AdminDeps,
  ctx: RequestContext,
  query: { from?: string; to?: string },
): Promise<UsageAnalytics> {
  const { db } = deps
  const now = deps.clock.now()
  const range = analyticsRange(query, now)
  const from = startOf(range.from)
  const toExclusive = dayAfter(range.to)

  const byRole: Record<Role, number> = { member: 0, admin: 0, owner: 0 }
  for (const r of await countUsersByRole(db)) byRole[r.role] = r.n
  const byPlan = Object.fromEntries(PLANS.map((p) => [p, 0])) as Record<Plan, number>
  for (const r of await countUsersByPlan(db, now)) byPlan[r.plan] = r.n
  const signups = await countSignupsPerDay(db, from, toExclusive)
  const activeSessions = await countActiveSessions(db, now)
  // A counter belongs to the range when its period (a UTC day or month) overlaps it.
  const usageRows = await sumUsage(
    db,
    METRICS.map((metric) => ({ metric, from: currentPeriod(metric, from).start })),
    toExclusive,
  )
  const payments: UsageAnalytics['payments'] = { paidCount: 0, revenueIdr: 0, byProduct: {} }
  for (const { product, count, revenueIdr } of await sumPaidPayments(db, from, toExclusive)) {
    payments.byProduct[product] = { count, revenueIdr }
    payments.paidCount += count
    payments.revenueIdr += revenueIdr
  }

  const analytics: UsageAnalytics = {
    range,
    users: {
      total: Object.values(byRole).reduce((a, b) => a + b, 0),
      byRole,
      byPlan,
      signupsPerDay: daysOf(range).map((date) => ({ date, count: signups.get(date) ?? 0 })),
    },
    activeSessions,
    usage: usageRows.map((r) => {
      const metric = r.metric as Metric
      const start = r.periodStart.toISOString()
      return {
        metric,
        period: METRIC_PERIOD[metric] === 'month' ? start.slice(0, 7) : start.slice(0, 10),
        total: r.total,
        users: r.users,
      }
    }),
    payments,
  }
  await recordAudit(db, {
    actorId: ctx.actorId,
    action: 'admin.analytics.viewed',
    targetType: 'analytics',
    ip: ctx.ip,
    details: { range },
  })
  return analytics
}

export async function listAuditEvents(
  deps: AdminDeps,
  ctx: RequestContext,
  filters: AuditFilters,
  page: PageRequest,
): Promise<Page<AuditEvent>> {
  const rows = await findAuditEvents(deps.db, filters, page)
  // Written after the read, so a listing never contains its own event.
  await recordAudit(deps.db, {
    actorId: ctx.actorId,
    action: 'admin.audit.listed',
    targetType: 'audit',
    ip: ctx.ip,
    details: { filters: { ...filters } },
  })
  return toPage(
    rows,
    page.limit,
    (r) => ({
      id: r.id,
      at: r.at,
      actorId: r.actor_id,
      action: r.action,
      targetType: r.target_type,
      targetId: r.target_id,
      ip: r.ip,
      details: r.details,
    }),
    (r) => ({ at: r.cursor_at, id: r.id }),
  )
}
