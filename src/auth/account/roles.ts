// Changing a user's role: the one place it is done, whoever asks for it (the admin API, the
// command line, BOOTSTRAP_OWNER_EMAIL). Who may ask for what is the caller's business (the admin
// service refuses owner changes through the API; the command line may set any role); what a
// change does is decided here, so the paths cannot disagree.
import type { Trx } from '../../../db/index.js'
import { recordAudit } from '../../shared/audit.js'
import { endSessionsOfUser, raiseCredentialEpoch, replaceRole } from '../core/queries.js'
import type { Role } from '../../shared/roles.js'

/** The privileges of each role, lowest first. A Record, so a new role must be ranked here. */
const RANK: Record<Role, number> = { member: 0, admin: 1, owner: 2 }

/**
 * A demotion is any loss of a privilege: admin -> member, owner -> member, and owner -> admin too
 * (an owner's sessions carry owner rights; the admin keeps none of them and signs in again).
 */
const isDemotion = (from: Role, to: Role): boolean => RANK[to] < RANK[from]

export interface RoleChange {
  userId: string
  /** The role read in the caller's transaction, with the user row locked (FOR UPDATE). */
  from: Role
  to: Role
  /** null when nobody signed in asked: the command line, the bootstrap. */
  actorId: string | null
  ip: string | null
  /** How it was asked for: the admin route ('role', 'make-admin'), 'cli', 'bootstrap_owner_email'. */
  via: string
  now: Date
}

/**
 * Applies a role change inside the caller's transaction: sets the role and updated_at (nothing to
 * set when `from` equals `to`), ends every session of the user on a demotion (none of the sessions
 * opened with the lost privilege survives; the next request with one is 401), and writes the one
 * `admin.user.role_changed` audit event, `{ via, before: { role }, after: { role }, sessionsRevoked }`.
 * A caller that records no-op acts (the admin API) calls it with `from === to`; one that does not
 * (the command line, the bootstrap) skips the call.
 */
export async function changeRole(trx: Trx, change: RoleChange): Promise<{ sessionsRevoked: number }> {
  const { userId, from, to, now } = change
  // The audit's `before` must be what was replaced.
  if (from !== to && !(await replaceRole(trx, userId, from, to, now))) {
    throw new Error(`changeRole: user ${userId} has no longer the role ${from}; lock the row first`)
  }
  // A demotion ends every session; any change of role ends sign-ins in flight (the credential epoch).
  const sessionsRevoked = isDemotion(from, to) ? await endSessionsOfUser(trx, userId) : 0
  if (from !== to && !isDemotion(from, to)) await raiseCredentialEpoch(trx, userId)
  await recordAudit(trx, {
    actorId: change.actorId,
    action: 'admin.user.role_changed',
    targetType: 'user',
    targetId: userId,
    ip: change.ip,
    details: { via: change.via, before: { role: from }, after: { role: to }, sessionsRevoked },
  })
  return { sessionsRevoked }
}
