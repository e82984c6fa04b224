// Impersonation (better-auth's admin plugin's impersonate-user and stop-impersonating): an
// administrator sees the app as a member sees it, to help with a support request.
//
// - Only a member is impersonated: nobody opens an administrator's or an owner's account this way.
// - The session is the member's, marked with who opened it (`impersonatedBy`) and the
//   administrator's own session it was opened from; it ends after an hour at most (never renewed),
//   with that session (the cascade of migration 0021_impersonation: a revocation, a ban or a demotion of the
//   administrator ends it at once, on every instance), and with stop-impersonating.
// - It is read-only unless IMPERSONATION_ALLOWS_WRITES (plugins/route-policy.ts), and never exports
//   the member's data, gets a token or adds a way in, whatever that says (`whileImpersonating: 'refused'`); never among the
//   member's list-sessions, audited at its start and end, in the member's security activity
//   (`impersonated`, by an administrator) and mailed to the member as a security notice.
import type { DB } from '../../db/index.js'
import { credentialEpochOf } from '../auth/core/queries.js'
import type { SecurityNotices } from '../auth/security/notices.js'
import type { SessionManager } from '../auth/session/sessions.js'
import { hashToken } from '../auth/core/tokens.js'
import type { SessionState, SessionView } from '../auth/session/types.js'
import { recordAudit } from '../shared/audit.js'
import type { Clock } from '../shared/clock.js'
import type { RequestContext } from '../shared/context.js'
import { AppError, unauthorized } from '../shared/errors.js'
import type { SignedInUser } from '../user/types.js'
import { findManagedUser, lockImpersonation, type ManagedUser } from './queries.js'

/** better-auth's default `impersonationSessionDuration`. */
export const IMPERSONATION_MS = 60 * 60 * 1000

export interface ImpersonationDeps {
  db: DB
  clock: Clock
  sessions: SessionManager
  notices: SecurityNotices
}

export const userNotFound = () => new AppError(404, 'USER_NOT_FOUND', 'User not found')
const cannotImpersonateAdmins = () => new AppError(403, 'YOU_CANNOT_IMPERSONATE_ADMINS', 'You cannot impersonate admins')
const notImpersonating = () => new AppError(400, 'BAD_REQUEST', 'You are not impersonating anyone')

/** The administrator and the session they ask from (the route's policy let only an admin or owner in). */
export interface Impersonator {
  id: string
  session: Pick<SessionState, 'id' | 'expiresAt'>
}

export interface Started {
  token: string
  session: SessionView
  user: ManagedUser
}

export async function impersonate(
  deps: ImpersonationDeps,
  ctx: RequestContext,
  admin: Impersonator,
  userId: string,
): Promise<Started> {
  const user = await findManagedUser(deps.db, userId)
  if (!user) throw userNotFound()
  // Read before the session is born; a promotion meanwhile raises the epoch, and create answers 401.
  if (user.role !== 'member') throw cannotImpersonateAdmins()
  const epoch = await credentialEpochOf(deps.db, userId)
  const now = deps.clock.now()
  const expiresAt = new Date(Math.min(now.getTime() + IMPERSONATION_MS, admin.session.expiresAt.getTime()))
  const impersonation = { by: admin.id, sessionId: admin.session.id, expiresAt }
  try {
    const created = await deps.sessions.create(
      { userId, epoch },
      { rememberMe: false, ipAddress: ctx.ip, userAgent: ctx.userAgent, impersonation },
      async (trx, session) => {
        await recordAudit(trx, {
          actorId: admin.id,
          action: 'admin.user.impersonated',
          targetType: 'user',
          targetId: userId,
          ip: ctx.ip,
          details: { sessionId: session.id, adminSessionId: admin.session.id, expiresAt: expiresAt.toISOString() },
        })
        return deps.notices.prepare(trx, ctx, userId, 'impersonated')
      },
    )
    created.alongside?.()
    return { token: created.token, session: created.session, user }
  } catch (err) {
    // The administrator's session ended while this one was being opened (the foreign key of 0021_impersonation).
    if ((err as { code?: string }).code === '23503') throw unauthorized()
    throw err
  }
}

export interface Restored {
  token: string
  session: SessionState
  user: SignedInUser
}

/**
 * Ends the impersonation the request came with (audited) and gives back the administrator's own
 * session kept aside in the admin_session cookie, only when it is the very session this
 * impersonation was opened from (`impersonator_session_id`, read and checked under the
 * impersonation's lock in the transaction that ends it): null when the kept cookie is missing, is
 * another session (of this administrator or anyone), or that session has ended meanwhile.
 */
export async function stopImpersonating(
  deps: ImpersonationDeps,
  ctx: RequestContext,
  current: { user: Pick<SignedInUser, 'id'>; session: Pick<SessionState, 'id' | 'impersonatedBy'> },
  keptToken: string | null,
): Promise<Restored | null> {
  const adminId = current.session.impersonatedBy
  if (!adminId) throw notImpersonating()
  const { id: userId } = current.user
  const keptHash = keptToken === null ? null : hashToken(keptToken)
  const restoring = await deps.db.transaction().execute(async (trx) => {
    const opened = await lockImpersonation(trx, { userId, sessionId: current.session.id, adminId, keptTokenHash: keptHash })
    if (!opened) throw unauthorized()
    const restoring = opened.kept === true
    await deps.sessions.revokeById(userId, current.session.id, trx)
    await recordAudit(trx, {
      actorId: adminId,
      action: 'admin.user.impersonation_ended',
      targetType: 'user',
      targetId: userId,
      ip: ctx.ip,
      details: { sessionId: current.session.id, via: 'stop-impersonating', restored: restoring },
    })
    return restoring ? opened.adminSessionId : null
  })
  if (restoring === null || keptToken === null || keptHash === null) return null
  // Still live (not expired, not banned) as the session validation says; the same row, by its id.
  const kept = await deps.sessions.validateHash(keptHash)
  if (!kept || kept.session.id !== restoring || kept.user.id !== adminId) return null
  return { token: keptToken, session: kept.session, user: kept.user }
}
