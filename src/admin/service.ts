// Admin acts on users. Each act and its audit event commit together, with before/after of what
// changed. Nobody changes an owner through the API, grants owner, or changes their own role.
import type { FastifyInstance } from 'fastify'
import type { SessionUser } from '../auth/session/sessions.js'
import type { Plan, Role } from '../auth/tables.js'
import { endSessionsOfUser, findUserById } from '../auth/queries.js'
import { iso, toUserJson, type UserJson } from '../auth/schemas.js'
import { AppError, forbidden, notFound } from '../shared/errors.js'
import { daysOf, usageAnalytics, type DateRange, type UsageAnalytics } from './analytics.js'
import { recordAudit } from '../shared/audit.js'
import { changeRole } from './roles.js'
import { toPage, type Cursor, type Page } from '../shared/pagination.js'
import {
  countsFor, findAuditEvents, findUserForUpdate, findUsers, updateUser,
  type AuditFilters, type UserCounts, type UserFilters,
} from './queries.js'
import type { AuditEventJson } from './schemas.js'

export interface Actor {
  user: SessionUser
  ip: string | null
}

const MAX_RANGE_DAYS = 366

const invalid = (path: string, message: string) =>
  new AppError(400, 'VALIDATION_ERROR', `Invalid ${path}: ${message}`, { data: { issues: [{ path, message }] } })

export async function listUsers(
  app: FastifyInstance,
  actor: Actor,
  filters: UserFilters,
  page: { limit: number; cursor?: Cursor },
): Promise<Page<UserJson>> {
  return app.db.transaction().execute(async (trx) => {
    const rows = await findUsers(trx, filters, page)
    const result = toPage(rows, page.limit, (r) => toUserJson(r.user), (r) => ({ at: r.cursorAt, id: r.user.id }))
    await recordAudit(trx, {
      actorId: actor.user.id, action: 'admin.users.listed', targetType: 'user', ip: actor.ip,
      details: { filters: { ...filters }, returned: result.items.length },
    })
    return result
  })
}

/** A moderation read of one user: audited like every read of another user's data. */
export async function getUser(app: FastifyInstance, actor: Actor, id: string): Promise<UserJson & { counts: UserCounts }> {
  return app.db.transaction().execute(async (trx) => {
    const user = await findUserById(trx, id)
    if (!user) throw notFound('User')
    const counts = await countsFor(trx, id, app.clock.now())
    await recordAudit(trx, { actorId: actor.user.id, action: 'admin.user.viewed', targetType: 'user', targetId: id, ip: actor.ip })
    return { ...toUserJson(user), counts }
  })
}

export async function setUserRole(app: FastifyInstance, actor: Actor, id: string, role: Role, via: string): Promise<UserJson> {
  // owner is granted only from the command line: an API session that leaks cannot mint one.
  if (role === 'owner') throw forbidden('The owner role cannot be granted through the API')
  if (id === actor.user.id) throw forbidden('You cannot change your own role')
  return app.db.transaction().execute(async (trx) => {
    const before = await findUserForUpdate(trx, id)
    if (!before) throw notFound('User')
    if (before.role === 'owner') throw forbidden('An owner cannot be changed through the API')
    // changeRole ends a demoted admin's sessions and audits the act, a no-op included.
    const now = app.clock.now()
    await changeRole(trx, { userId: id, from: before.role, to: role, actorId: actor.user.id, ip: actor.ip, via, now })
    return toUserJson(before.role === role ? before : { ...before, role, updatedAt: now })
  })
}

export async function setUserPlan(
  app: FastifyInstance,
  actor: Actor,
  id: string,
  plan: Plan,
  expiresAt: string | undefined,
  via: string,
): Promise<UserJson> {
  const now = app.clock.now()
  const expiry = expiresAt === undefined ? null : new Date(expiresAt)
  if (expiry && expiry.getTime() <= now.getTime()) throw invalid('body.expiresAt', 'must be in the future')
  if (expiry && plan === 'free') throw invalid('body.expiresAt', 'the free plan does not expire')
  return app.db.transaction().execute(async (trx) => {
    const before = await findUserForUpdate(trx, id)
    if (!before) throw notFound('User')
    if (before.role === 'owner') throw forbidden('An owner cannot be changed through the API')
    const after = await updateUser(trx, id, { plan, plan_expires_at: expiry }, now)
    await recordAudit(trx, {
      actorId: actor.user.id, action: 'admin.user.plan_changed', targetType: 'user', targetId: id, ip: actor.ip,
      details: {
        via,
        before: { plan: before.plan, planExpiresAt: iso(before.planExpiresAt) },
        after: { plan: after.plan, planExpiresAt: iso(after.planExpiresAt) },
      },
    })
    return toUserJson(after)
  })
}

export async function revokeUserSessions(app: FastifyInstance, actor: Actor, id: string): Promise<{ revoked: number }> {
  return app.db.transaction().execute(async (trx) => {
    const target = await findUserForUpdate(trx, id)
    if (!target) throw notFound('User')
    if (target.role === 'owner' && target.id !== actor.user.id) throw forbidden('An owner cannot be changed through the API')
    const revoked = await endSessionsOfUser(trx, id)
    await recordAudit(trx, {
      actorId: actor.user.id, action: 'admin.user.sessions_revoked', targetType: 'user', targetId: id, ip: actor.ip,
      details: { before: { sessions: revoked }, after: { sessions: 0 }, revoked },
    })
    return { revoked }
  })
}

export async function getUsageAnalytics(
  app: FastifyInstance,
  actor: Actor,
  query: { from?: string; to?: string },
): Promise<UsageAnalytics> {
  const today = app.clock.now().toISOString().slice(0, 10)
  const to = query.to ?? today
  const from = query.from ?? new Date(Date.parse(`${to}T00:00:00Z`) - 29 * 86_400_000).toISOString().slice(0, 10)
  if (from > to) throw invalid('querystring.from', 'must not be after `to`')
  const range: DateRange = { from, to }
  if (daysOf(range).length > MAX_RANGE_DAYS) throw invalid('querystring.from', `the range is at most ${MAX_RANGE_DAYS} days`)
  const analytics = await usageAnalytics(app.db, range, app.clock.now())
  await recordAudit(app.db, {
    actorId: actor.user.id, action: 'admin.analytics.viewed', targetType: 'analytics', ip: actor.ip, details: { range },
  })
  return analytics
}

export async function listAuditEvents(
  app: FastifyInstance,
  actor: Actor,
  filters: AuditFilters,
  page: { limit: number; cursor?: Cursor },
): Promise<Page<AuditEventJson>> {
  const rows = await findAuditEvents(app.db, filters, page)
  // Written after the read, so a listing never contains its own event.
  await recordAudit(app.db, {
    actorId: actor.user.id, action: 'admin.audit.listed', targetType: 'audit', ip: actor.ip, details: { filters: { ...filters } },
  })
  return toPage(rows, page.limit, (r) => ({
    id: r.id,
    at: r.at.toISOString(),
    actorId: r.actor_id,
    action: r.action,
    targetType: r.target_type,
    targetId: r.target_id,
    ip: r.ip,
    details: r.details,
  }), (r) => ({ at: r.cursor_at, id: r.id }))
}
