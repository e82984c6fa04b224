// An administrator's look at one user's sessions and the end of one of them (better-auth's admin
// plugin's list-user-sessions and revoke-user-session). Ending all of them is revokeUserSessions
// (service.ts), the same act as the admin procedure's.
import { deleteSessionOfUser, listLiveSessions } from '../auth/session/queries.js'
import type { SessionView } from '../auth/session/types.js'
import { recordAudit } from '../shared/audit.js'
import type { RequestContext } from '../shared/context.js'
import { notFound } from '../shared/errors.js'
import { findManagedUser, findUserForUpdate, ownerOfSession } from './queries.js'
import { type AdminDeps, assertMayEndSessionsOf } from './service.js'

/**
 * The user's live sessions, newest first, an administrator's impersonation of them included
 * (`impersonatedBy` says whose). A moderation read: audited, as it shows addresses and browsers.
 */
export async function listUserSessions(deps: AdminDeps, ctx: RequestContext, userId: string): Promise<SessionView[]> {
  return deps.db.transaction().execute(async (trx) => {
    if (!(await findManagedUser(trx, userId))) throw notFound('User')
    const sessions = await listLiveSessions(trx, userId, deps.clock.now(), { impersonations: true })
    await recordAudit(trx, {
      actorId: ctx.actorId,
      action: 'admin.user.sessions_listed',
      targetType: 'user',
      targetId: userId,
      ip: ctx.ip,
      details: { returned: sessions.length },
    })
    return sessions
  })
}

/**
 * Ends one session by its public id, whoever's it is: 404 when there is none. The rule of
 * revokeUserSessions: nobody ends an owner's sessions but the owner. Audited as an admin's
 * revocation, which the user sees in their security activity.
 */
export async function revokeUserSession(deps: AdminDeps, ctx: RequestContext, sessionId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const userId = await ownerOfSession(trx, sessionId)
    const target = userId === undefined ? undefined : await findUserForUpdate(trx, { id: userId })
    if (!target) throw notFound('Session')
    assertMayEndSessionsOf(target, ctx)
    if (!(await deleteSessionOfUser(trx, target.id, sessionId))) throw notFound('Session')
    await recordAudit(trx, {
      actorId: ctx.actorId,
      action: 'admin.user.sessions_revoked',
      targetType: 'user',
      targetId: target.id,
      ip: ctx.ip,
      details: { via: 'revoke-user-session', sessionId, revoked: 1 },
    })
  })
}
