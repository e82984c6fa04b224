// What survives a mailbox (docs/http-contract.md, "Recovery"): a second factor (TOTP, or a passkey)
// is set up only by a session that proved the account's address itself, and once an account has one,
// no proof of the mailbox alone signs in or takes the account back.
import type { Executor, Trx } from '../../../db/index.js'
import { AppError } from '../../shared/errors.js'
import type { SecondFactor } from './schemas.js'
import { countPasskeys } from './queries.js'
import { lockUser } from '../../user/queries.js'

/**
 * Whether nobody has proven the account's ways in are its mailbox holder's: the address was never
 * verified, or verified by a link or code used without a session of the account (a mail scanner, a
 * phone's mail app, or whoever reads the mail but never made the account).
 */
export const waysInUnproven = (user: { emailVerified: boolean; waysInUnproven: boolean }): boolean =>
  !user.emailVerified || user.waysInUnproven

/**
 * The second factors a sign-in that did not use one must still pass, as better-auth's
 * `twoFactorMethods` names them: 'totp' (a code or a backup code on the two_factor cookie's
 * challenge), 'passkey' (a passkey sign-in, which needs nothing else).
 */
export type { SecondFactor }

/** The account's second factors, read in `db` (the caller's transaction, its user row locked, when it acts on them). */
export async function secondFactorsOf(db: Executor, user: { id: string; twoFactorEnabled: boolean }): Promise<SecondFactor[]> {
  const factors: SecondFactor[] = user.twoFactorEnabled ? ['totp'] : []
  if ((await countPasskeys(db, user.id)) > 0) factors.push('passkey')
  return factors
}

/**
 * 403 EMAIL_NOT_PROVEN: setting up a second factor needs the address proven by a session of the
 * account (a code typed in it, or the verification link opened in it). Anyone may register an
 * address without reading its mail, and a mail scanner or a phone's mail app opens links: a second
 * factor set up by whoever that was would outlast the owner's recovery through the mailbox.
 */
export const emailNotProven = () =>
  new AppError(
    403,
    'EMAIL_NOT_PROVEN',
    'Verify your email address while signed in first: type the emailed code, or open the emailed link, in this browser',
  )

const PROOF = ['id', 'email_verified', 'ways_in_unproven'] as const

/**
 * Throws EMAIL_NOT_PROVEN unless the account's address was proven by a session of the account: a
 * first look, before any Argon2 work or ceremony; the transaction that adds the factor judges again
 * (lockProvenUser).
 */
export async function assertEmailProven(db: Executor, userId: string): Promise<void> {
  const user = await db.selectFrom('user').select(PROOF).where('id', '=', userId).executeTakeFirst()
  if (user && waysInUnproven({ emailVerified: user.email_verified, waysInUnproven: user.ways_in_unproven }))
    throw emailNotProven()
}

/** The same, read with the user row locked in the transaction that adds the second factor; false when the user is gone. */
export async function lockProvenUser(trx: Trx, userId: string): Promise<boolean> {
  const user = await lockUser(trx, { id: userId }, PROOF)
  if (!user) return false
  if (waysInUnproven(user)) throw emailNotProven()
  return true
}
