// Taking an account back: the one step that leaves whoever just proved the account's address
// holding its only way in. Used by a password reset of an account whose ways in nobody had proven
// were its mailbox holder's (an address never verified, or verified by a link opened without the
// account's session), by the identity provider vouching for such an address, by a sign-in with an
// emailed code or link (src/auth/mailbox/), and by the bootstrap owner's promotion. Never of an
// account with a second factor (second-factor.ts): the mailbox alone does not beat one.
import type { Trx } from '../../../db/index.js'
import { deleteAccountsBut, endSessionsOfUser } from '../core/queries.js'
import { lockUser } from '../../user/queries.js'
import { revokeTokens } from '../links/verification.js'
import { deleteChallenges } from '../links/challenges.js'
import type { Role } from '../../shared/roles.js'
import { changeRole } from './roles.js'
import { secondFactorsOf, waysInUnproven } from '../session/second-factor.js'
import { forgetKnownDevices } from '../security/queries.js'

/**
 * The way in that stays: the password just set by a reset, the provider login just used, or none
 * (an emailed code or sign-in link: the mailbox is the way in, and a reset gives a password back).
 */
export type KeptWayIn = 'password' | 'none' | { providerId: string; subject: string }

export interface TakenBack {
  /** The provider ids of the ways in removed ('credential' for a password). */
  removedAccounts: string[]
  sessionsEnded: number
  tokensRevoked: number
  /** The role the account had: a take-back leaves it a member. */
  roleBefore: Role
  knownDevicesForgotten: number
}

/**
 * Whether a proof of the mailbox takes this account back: its ways in are unproven and it has no
 * second factor (one was set up by a session that proved the address: its holder is the owner, and
 * the sign-in asks for it instead). `user` is read with its row locked in the caller's transaction.
 */
export async function takesBack(
  trx: Trx,
  user: { id: string; emailVerified: boolean; waysInUnproven: boolean; twoFactorEnabled: boolean },
): Promise<boolean> {
  return waysInUnproven(user) && (await secondFactorsOf(trx, user)).length === 0
}

/**
 * In the caller's transaction, with the user row locked first (the order every writer of the
 * account takes): every way in but `keep` goes, sign-ins waiting for a second factor, every session
 * (the credential epoch rises, so no sign-in in flight outlives it), every emailed link, every known
 * device (security/devices.ts: a browser of whoever held the account must not keep the allowances
 * of the owner's); a role above member is lowered to member (audited as every role change: whoever
 * held the account's ways in may have been given it, and the mailbox is not a person); the address
 * counts as proven by its holder. A second factor is never removed: the caller takes back only an
 * account without one (takesBack), or one the bootstrap owner's rule leaves to whoever holds both.
 */
export async function takeAccountBack(
  trx: Trx,
  userId: string,
  keep: KeptWayIn,
  at: { now: Date; ip: string | null },
): Promise<TakenBack> {
  const locked = await lockUser(trx, { id: userId }, ['id', 'role'])
  if (!locked) throw new Error(`takeAccountBack: user ${userId} is gone; lock the row first`)
  const removedAccounts = (await deleteAccountsBut(trx, userId, keep)).sort()
  await deleteChallenges(trx, userId)
  await trx
    .updateTable('user')
    .set({ email_verified: true, ways_in_unproven: false, updated_at: at.now })
    .where('id', '=', userId)
    .execute()
  const sessionsEnded = await endSessionsOfUser(trx, userId)
  if (locked.role !== 'member') {
    await changeRole(trx, { userId, from: locked.role, to: 'member', actorId: null, ip: at.ip, via: 'take_back', now: at.now })
  }
  const tokensRevoked = await revokeTokens(trx, userId)
  const knownDevicesForgotten = await forgetKnownDevices(trx, userId)
  return { removedAccounts, sessionsEnded, tokensRevoked, roleBefore: locked.role, knownDevicesForgotten }
}
