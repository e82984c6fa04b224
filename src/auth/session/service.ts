// Starting and ending sessions: what a sign-in, a sign-out and a revocation do besides the cookie,
// which stays with the routes (SessionCookie).
import type { DB, Trx } from '../../../db/index.js'
import { recordAudit, recordUserEvent } from '../../shared/audit.js'
import type { RequestContext } from '../../shared/context.js'
import { notFound } from '../../shared/errors.js'
import { endSessionsOfUser } from '../core/queries.js'
import { provesAddress } from './second-factor.js'
import type { CheckedCredential, SessionManager } from './sessions.js'
import type { SessionView } from './types.js'

export interface SessionDeps {
  db: DB
  sessions: SessionManager
}

/**
 * A new session for a sign-in, with a fresh token (no session fixation). `replacing` is the token
 * of a cookie the request came with: its session ends.
 */
export async function startSession<T = undefined>(
  deps: SessionDeps,
  ctx: RequestContext,
  input: {
    credential: CheckedCredential
    /** How the credential was proven (sign-in/step.ts, LoginMethod): kept in the audit trail. */
    method: string
    rememberMe: boolean
    replacing: string | null
    twoFactorVerified?: boolean
  },
  /** Run in the session's transaction (SessionManager.create). */
  alongside?: (trx: Trx) => Promise<T>,
): Promise<{ token: string; session: SessionView; alongside: T | undefined }> {
  if (input.replacing) await deps.sessions.revokeByToken(input.replacing)
  const started = await deps.sessions.create(
    input.credential,
    {
      rememberMe: input.rememberMe,
      ipAddress: ctx.ip,
      userAgent: ctx.userAgent,
      twoFactorVerified: input.twoFactorVerified,
      emailProven: provesAddress(input.method),
    },
    alongside,
  )
  await recordAudit(deps.db, {
    actorId: input.credential.userId,
    action: 'auth.sign_in',
    targetType: 'session',
    targetId: started.session.id,
    ip: ctx.ip,
    // The browser, as it names itself: the owner's security activity shows it (me.listSecurityEvents).
    details: {
      userAgent: started.session.userAgent,
      method: input.method,
      ...(input.twoFactorVerified ? { twoFactor: true } : {}),
    },
  })
  return started
}

/** Ends one session of the user by its public id; 404 for an unknown id or another user's session. */
export async function revokeSession(deps: SessionDeps, ctx: RequestContext, userId: string, sessionId: string): Promise<void> {
  if (!(await deps.sessions.revokeById(userId, sessionId))) throw notFound('Session')
  await recordAudit(deps.db, {
    actorId: userId,
    action: 'auth.session_revoked',
    targetType: 'session',
    targetId: sessionId,
    ip: ctx.ip,
  })
}

/** Ends every session of the user but `currentSessionId`. */
export async function revokeOtherSessions(
  deps: SessionDeps,
  ctx: RequestContext,
  userId: string,
  currentSessionId: string,
): Promise<void> {
  const ended = await deps.sessions.revokeAll(userId, currentSessionId)
  await recordUserEvent(deps.db, ctx, userId, 'auth.other_sessions_revoked', { ended })
}

/** Ends every session of the user, the current one included (better-auth's revoke-sessions). */
export async function revokeAllSessions(deps: SessionDeps, ctx: RequestContext, userId: string): Promise<void> {
  const ended = await endSessionsOfUser(deps.db, userId)
  await recordUserEvent(deps.db, ctx, userId, 'auth.all_sessions_revoked', { ended })
}
