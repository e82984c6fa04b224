// Single-use tokens for password reset, email verification, the change of address, account deletion
// and sign-in links (one-time codes: codes.ts). The token (256 random bits) goes
// only into the emailed link; the `verification` table holds its SHA-256, so a database dump
// yields no working link. Using a token deletes its row, inside the caller's transaction.
import type { ExpressionBuilder } from 'kysely'
import { json, type Executor, type Trx } from '../../../db/index.js'
import type { Database } from '../../../db/schema.js'
import { AppError } from '../../shared/errors.js'
import { newId } from '../../shared/ids.js'
import { hashToken, newToken } from '../core/tokens.js'
import { countRows } from '../../shared/count-rows.js'

/**
 * `(token_hash = H(token) and purpose …)`: the row of `token` when it serves `purpose` (or one of
 * `purposes`). How every peek at or use of a token finds it; only the hash of a token is stored.
 */
export function tokenFor(token: string, purpose: Purposes) {
  return (eb: ExpressionBuilder<Database, 'verification'>) =>
    eb.and([
      eb('token_hash', '=', hashToken(token)),
      typeof purpose === 'string' ? eb('purpose', '=', purpose) : eb('purpose', 'in', purpose),
    ])
}

export type VerificationPurpose =
  | 'reset-password'
  | 'verify-email'
  /** A verified account's current address approves a change of address (better-auth's first step). */
  | 'change-email-confirmation'
  /** The new address proves itself; using it changes the address. */
  | 'change-email-verification'
  /** An account without a password confirms its deletion. */
  | 'delete-account'
  /** A security notice's "this wasn't me" link (src/auth/security/notices.ts). */
  | 'security-notice'
  /** A sign-in link (better-auth's magic link): proves the mailbox and signs in (src/auth/mailbox/). */
  | 'magic-link'
  /** Emailed one-time codes (links/codes.ts), by what they do. */
  | 'sign-in-code'
  | 'verify-email-code'
  | 'reset-password-code'
  /** A code sent to a phone number (src/auth/phone/), keyed by the number. */
  | 'phone-code'
  /** Not mailed (challenges.ts): a sign-in awaiting its second factor, a trusted device, a passkey ceremony. */
  | 'two-factor-challenge'
  | 'two-factor-trusted-device'
  | 'passkey-registration'
  | 'passkey-authentication'

/** What a token may serve: one purpose, or any of several. */
export type Purposes = VerificationPurpose | readonly VerificationPurpose[]

/** An emailed link whose token is unknown, used or expired; 404 where better-auth answers so (the deletion link). */
export const invalidToken = (status = 400) => new AppError(status, 'INVALID_TOKEN', 'The link is invalid, used or expired')

export interface VerificationRecord {
  userId: string
  data: Record<string, unknown>
}

export interface PurposedRecord extends VerificationRecord {
  purpose: VerificationPurpose
}

/** `userId` null: a token nobody receives (see requestPasswordReset), purged when it expires. */
export async function issueToken(
  db: Executor,
  purpose: VerificationPurpose,
  userId: string | null,
  options: { expiresAt: Date; data?: Record<string, unknown> },
): Promise<string> {
  const token = newToken()
  await db
    .insertInto('verification')
    .values({
      id: newId(),
      purpose,
      token_hash: hashToken(token),
      user_id: userId,
      data: json(options.data ?? {}),
      expires_at: options.expiresAt,
    })
    .execute()
  return token
}

/**
 * The live record of a token without using it (to refuse a bad token before costly work); a link
 * that may serve any of `purposes` (the one verify-email link of better-auth's mails) names them all.
 */
export async function peekToken(db: Executor, purpose: Purposes, token: string, now: Date): Promise<PurposedRecord | null> {
  const row = await db
    .selectFrom('verification')
    .select(['purpose', 'user_id', 'data'])
    .where(tokenFor(token, purpose))
    .where('expires_at', '>', now)
    .executeTakeFirst()
  return row?.user_id ? { purpose: row.purpose as VerificationPurpose, userId: row.user_id, data: row.data } : null
}

/**
 * Deletes the token and returns its record when it was live. The delete is the claim: of two
 * concurrent uses only one gets the row back. An expired token is deleted too, and yields null.
 * The token says which of `purposes` it serves.
 */
export async function consumeToken(trx: Trx, purpose: Purposes, token: string, now: Date): Promise<PurposedRecord | null> {
  const row = await claimToken(trx, token, purpose, now)
  return row?.userId ? { purpose: row.purpose, userId: row.userId, data: row.data } : null
}

/**
 * Deletes the token's row and returns it when it was live: how every use of a token spends it. The
 * delete is the claim: of two concurrent uses only one gets the row back. An expired token is
 * deleted too, and yields null. `userId` is null for a token issued to no account.
 */
export async function claimToken(
  db: Executor,
  token: string,
  purpose: Purposes,
  now: Date,
): Promise<{ purpose: VerificationPurpose; userId: string | null; data: Record<string, unknown> } | null> {
  const row = await db
    .deleteFrom('verification')
    .where(tokenFor(token, purpose))
    .returning(['purpose', 'user_id', 'data', 'expires_at'])
    .executeTakeFirst()
  if (!row || row.expires_at.getTime() <= now.getTime()) return null
  return { purpose: row.purpose as VerificationPurpose, userId: row.user_id, data: row.data }
}

/** Ends the user's pending tokens of those purposes, or of every purpose; returns how many ended. */
export async function revokeTokens(trx: Trx, userId: string, purpose?: Purposes): Promise<number> {
  let query = trx.deleteFrom('verification').where('user_id', '=', userId)
  if (typeof purpose === 'string') query = query.where('purpose', '=', purpose)
  else if (purpose !== undefined) query = query.where('purpose', 'in', purpose)
  const result = await query.executeTakeFirst()
  return Number(result.numDeletedRows)
}

/** A sign-in link's record: the address it was sent to, and no account yet when none had it. */
export interface MagicLinkRecord {
  userId: string | null
  data: Record<string, unknown>
}

/** The live record of a sign-in link without using it. */
export async function peekMagicLink(db: Executor, token: string, now: Date): Promise<MagicLinkRecord | null> {
  const row = await db
    .selectFrom('verification')
    .select(['user_id', 'data'])
    .where(tokenFor(token, 'magic-link'))
    .where('expires_at', '>', now)
    .executeTakeFirst()
  return row ? { userId: row.user_id, data: row.data } : null
}

/** Deletes a sign-in link and returns its record when it was live (`consumeToken`, for a link that may have no account yet). */
export async function consumeMagicLink(trx: Trx, token: string, now: Date): Promise<MagicLinkRecord | null> {
  const row = await claimToken(trx, token, 'magic-link', now)
  return row && { userId: row.userId, data: row.data }
}

/** How many of the user's live links of `purpose` expire after `after` (were issued since then plus their lifetime). */
export async function countLinksExpiringAfter(
  db: Executor,
  userId: string,
  purpose: VerificationPurpose,
  after: Date,
): Promise<number> {
  return countRows(
    db.selectFrom('verification').where('user_id', '=', userId).where('purpose', '=', purpose).where('expires_at', '>', after),
  )
}
