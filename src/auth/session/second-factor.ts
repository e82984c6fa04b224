// What survives a mailbox (docs/http-contract.md, "Recovery"): a second factor (TOTP, or a passkey)
// is set up only by a session that proved the account's address itself, recently, and once an account
// has one, no proof of the mailbox alone signs in or takes the account back.
import type { Executor, Trx } from '../../../db/index.js'
import { AppError, unauthorized } from '../../shared/errors.js'
import type { SecondFactor } from '../core/schemas.js'
import { countPasskeys } from '../core/queries.js'
import { findSessionProof, type SessionProof } from './queries.js'
import { FRESH_AGE_MS } from './fresh.js'
import type { LoginMethod } from './types.js'
import { findUserById } from '../../user/queries.js'

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
 * 403 EMAIL_NOT_PROVEN: setting up a second factor needs the address proven by this very session,
 * recently (sessionProves). Anyone may register an address without reading its mail, a mail scanner
 * or a phone's mail app opens links, and a session may be stolen: a second factor set up by whoever
 * that was would outlast the owner's recovery through the mailbox.
 */
export const emailNotProven = () =>
  new AppError(
    403,
    'EMAIL_NOT_PROVEN',
    'Verify your email address while signed in first: type the emailed code, or open the emailed link, in this browser',
  )

/**
 * How long a session's proof counts for setting up a second factor: a day, better-auth's freshAge
 * (fresh.ts). Long enough to verify, then scan a code or touch a key; short enough that a
 * session cookie copied later from the owner's browser is refused like any other session.
 */
export const ADDRESS_PROOF_MAX_AGE_MS = FRESH_AGE_MS

/** How a sign-in proves the address in the browser it signs in: an emailed code or sign-in link used there. */
export const provesAddress = (method: LoginMethod): boolean => method === 'email-otp' || method === 'magic-link'

/**
 * Whether the session may set up a second factor, at `now`: it proved the address itself within
 * ADDRESS_PROOF_MAX_AGE_MS (a code typed in it, the link opened in it, or a sign-in by an emailed
 * code or link; a password or a provider's sign-in proves nothing of the mailbox), or, for an
 * account that has a second factor already, it signed in with one within that time (a passkey, a
 * TOTP or backup code, a trusted device): its holder proved more than the mailbox. `factors`: the
 * account's second factors now.
 */
export function sessionProves(proof: SessionProof, factors: readonly SecondFactor[], now: Date): boolean {
  const recent = (at: Date | null) => at !== null && now.getTime() - at.getTime() < ADDRESS_PROOF_MAX_AGE_MS
  return recent(proof.emailProvenAt) || (proof.twoFactorVerified && factors.length > 0 && recent(proof.createdAt))
}

type SessionOf = { id: string; userId: string }

/**
 * Throws EMAIL_NOT_PROVEN unless the session may set up a second factor: a first look, before any
 * Argon2 work or ceremony; the transaction that adds the factor judges again (lockProvenSession).
 */
export async function assertEmailProven(db: Executor, session: SessionOf, now: Date): Promise<void> {
  const proof = await findSessionProof(db, session, { lock: false })
  const user = await findUserById(db, session.userId)
  if (!proof || !user) throw unauthorized()
  if (!sessionProves(proof, await secondFactorsOf(db, user), now)) throw emailNotProven()
}

/**
 * The same, in the transaction that adds the second factor, with the user row already locked by the
 * caller (the order of every writer of the account): the session row is locked and read, so a
 * sign-out, a revoke or a reset that ends it either went first (false: nothing is added) or waits for
 * this one and ends the factor's session with the rest.
 */
export async function lockProvenSession(trx: Trx, session: SessionOf, now: Date): Promise<boolean> {
  const proof = await findSessionProof(trx, session, { lock: true })
  const user = proof && (await findUserById(trx, session.userId))
  if (!proof || !user) return false
  if (!sessionProves(proof, await secondFactorsOf(trx, user), now)) throw emailNotProven()
  return true
}
