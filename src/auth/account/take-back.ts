// Taking an account back: the one step that leaves whoever just proved the account's address
// holding its only way in. Used by a password reset of an account whose ways in nobody had proven
// were its mailbox holder's (an address never verified, or verified by a link opened without the
// account's session), by the identity provider vouching for such an address, by a sign-in with an
// emailed code or link (src/auth/mailbox/), and by the bootstrap owner's promotion.
import type { Trx } from '../../../db/index.js'
import { deleteAccountsBut, endSessionsOfUser } from '../queries.js'
import { lockUser } from '../../user/queries.js'
import { deleteTwoFactor } from '../two-factor/queries.js'
import { revokeTokens } from '../links/verification.js'
import { deletePasskeysOf } from '../passkey/queries.js'
import { forgetKnownDevices } from '../security/queries.js'

/**
 * The way in that stays: the password just set by a reset, the provider login just used, or none
 * (an emailed code or sign-in link: the mailbox is the way in, and a reset gives a password back).
 */
export type KeptWayIn = 'password' | 'none' | { providerId: string; subject: string }

export interface TakenBack {
  /** The provider ids of the ways in removed ('credential' for a password). */
  removedAccounts: string[]
  passkeysRemoved: number
  sessionsEnded: number
  trustedDevicesRevoked: number
  tokensRevoked: number
  knownDevicesForgotten: number
}

/**
 * In the caller's transaction, with the user row locked first (the order every writer of the
 * account takes): every way in but `keep` goes (passkeys too), the second factor with its backup codes, trusted
 * devices and sign-in challenges, every session (the credential epoch rises, so no sign-in in
 * flight outlives it), every emailed link, every known device (security/devices.ts: a browser of
 * whoever held the account must not keep the allowances of the owner's); the address counts as
 * proven by its holder.
 */
export async function takeAccountBack(trx: Trx, userId: string, keep: KeptWayIn, now: Date): Promise<TakenBack> {
  await lockUser(trx, { id: userId }, ['id'])
  const removedAccounts = (await deleteAccountsBut(trx, userId, keep)).sort()
  const passkeysRemoved = await deletePasskeysOf(trx, userId)
  const { trustedDevices } = await deleteTwoFactor(trx, userId)
  await trx
    .updateTable('user')
    .set({ two_factor_enabled: false, email_verified: true, ways_in_unproven: false, updated_at: now })
    .where('id', '=', userId)
    .execute()
  const sessionsEnded = await endSessionsOfUser(trx, userId)
  const tokensRevoked = await revokeTokens(trx, userId)
  const knownDevicesForgotten = await forgetKnownDevices(trx, userId)
  return {
    removedAccounts,
    passkeysRemoved,
    sessionsEnded,
    trustedDevicesRevoked: trustedDevices,
    tokensRevoked,
    knownDevicesForgotten,
  }
}

/** Whether a proof of the address must take the account back: nobody has proven its ways in are the mailbox holder's. */
export const waysInUnproven = (user: { emailVerified: boolean; waysInUnproven: boolean }): boolean =>
  !user.emailVerified || user.waysInUnproven
