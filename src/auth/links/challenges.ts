// The `verification` rows that are not mailed: a sign-in's challenge while its second factor is
// awaited, a trusted device (two-factor), and a passkey ceremony's challenge. Kept here with the
// emailed links (verification.ts) and codes (codes.ts): one place owns the table. Like every link,
// each token is stored only as its SHA-256.
import { sql } from 'kysely'
import { json, type Executor, type Trx } from '../../../db/index.js'
import { newId } from '../../shared/ids.js'
import { hashToken, newToken } from '../core/tokens.js'
import { claimToken, revokeTokens, tokenFor, type VerificationPurpose } from './verification.js'

const CHALLENGE = 'two-factor-challenge' satisfies VerificationPurpose
const TRUSTED_DEVICE = 'two-factor-trusted-device' satisfies VerificationPurpose

// --- Sign-in challenges: the first factor passed, the second is awaited ---

/**
 * The provider login to link once the second step passed, and the address the provider vouched for
 * (src/auth/sign-in/provider-link.ts links it).
 */
export interface PendingLink {
  providerId: string
  subject: string
  email: string
}

export interface Challenge {
  userId: string
  rememberMe: boolean
  /** The credential epoch read with the first factor: the session it leads to is born only while unchanged. */
  epoch: number
  /** The first factor's login method (sign-in/step.ts), which the session will name. */
  method: string
  /** A provider login to link once the second factor passed (sign-in/provider-link.ts). */
  link?: PendingLink
}

/** The pending link kept in a challenge's data, or undefined for anything else. */
function pendingLinkOf(data: unknown): PendingLink | undefined {
  if (typeof data !== 'object' || data === null) return undefined
  const { providerId, subject, email } = data as Record<string, unknown>
  if (typeof providerId !== 'string' || typeof subject !== 'string' || typeof email !== 'string') return undefined
  return { providerId, subject, email }
}

export async function issueChallenge(db: Executor, challenge: Challenge, expiresAt: Date): Promise<string> {
  const { userId, rememberMe, epoch, method, link } = challenge
  const token = newToken()
  await db
    .insertInto('verification')
    .values({
      id: newId(),
      purpose: CHALLENGE,
      token_hash: hashToken(token),
      user_id: userId,
      data: json({ attempts: 0, rememberMe, epoch, method, ...(link ? { link } : {}) }),
      expires_at: expiresAt,
    })
    .execute()
  return token
}

const attemptsOf = sql<number>`coalesce((data->>'attempts')::int, 0)`

/**
 * Takes one try of a live challenge before its code is checked. `exhausted` when its tries are spent
 * (the challenge is then deleted: the user signs in again for a new one); null when there is no live
 * challenge for the token.
 */
export async function claimChallengeAttempt(
  db: Executor,
  token: string,
  max: number,
  now: Date,
): Promise<Challenge | 'exhausted' | null> {
  const tokenHash = hashToken(token)
  const row = await db
    .updateTable('verification')
    .set({ data: sql<string>`jsonb_set(data, '{attempts}', to_jsonb(${attemptsOf} + 1))` })
    .where('token_hash', '=', tokenHash)
    .where('purpose', '=', CHALLENGE)
    .where('expires_at', '>', now)
    .where(attemptsOf, '<', max)
    .returning(['user_id', 'data'])
    .executeTakeFirst()
  if (row?.user_id) {
    // A challenge without an epoch (issued before migration 0013) can start no session.
    const epoch = typeof row.data.epoch === 'number' ? row.data.epoch : -1
    const method = typeof row.data.method === 'string' ? row.data.method : 'email'
    const link = pendingLinkOf(row.data.link)
    return { userId: row.user_id, rememberMe: row.data.rememberMe !== false, epoch, method, ...(link ? { link } : {}) }
  }
  const spent = await db
    .deleteFrom('verification')
    .where('token_hash', '=', tokenHash)
    .where('purpose', '=', CHALLENGE)
    .where('expires_at', '>', now)
    .executeTakeFirst()
  return spent.numDeletedRows > 0n ? 'exhausted' : null
}

/** Ends every sign-in of the user still waiting for its second factor (the password changed under it). */
export const deleteChallenges = (trx: Trx, userId: string): Promise<number> => revokeTokens(trx, userId, CHALLENGE)

/** Ends the challenge once its second factor passed; false when another request ended it first. */
export async function consumeChallenge(trx: Trx, token: string, userId: string): Promise<boolean> {
  const result = await trx
    .deleteFrom('verification')
    .where(tokenFor(token, CHALLENGE))
    .where('user_id', '=', userId)
    .executeTakeFirst()
  return result.numDeletedRows > 0n
}

// --- Trusted devices: a browser that passed the second factor skips it for 30 days ---

export async function issueTrustedDevice(db: Executor, userId: string, expiresAt: Date): Promise<string> {
  const token = newToken()
  await db
    .insertInto('verification')
    .values({ id: newId(), purpose: TRUSTED_DEVICE, token_hash: hashToken(token), user_id: userId, expires_at: expiresAt })
    .execute()
  return token
}

/** Uses the user's trusted-device token (it is replaced by a new one); false when it is not theirs or not live. */
export async function consumeTrustedDevice(trx: Trx, token: string, userId: string, now: Date): Promise<boolean> {
  const row = await trx
    .deleteFrom('verification')
    .where(tokenFor(token, TRUSTED_DEVICE))
    .where('user_id', '=', userId)
    .returning('expires_at')
    .executeTakeFirst()
  return row !== undefined && row.expires_at.getTime() > now.getTime()
}

/** Ends every trusted device of the user (two-factor turned off or taken back); how many. */
export const deleteTrustedDevices = (trx: Trx, userId: string): Promise<number> => revokeTokens(trx, userId, TRUSTED_DEVICE)

// --- Passkey ceremonies' challenges: one per ceremony, single-use, minutes of life ---

export type Ceremony = Extract<VerificationPurpose, 'passkey-registration' | 'passkey-authentication'>

export interface CeremonyChallenge {
  /** The user the ceremony was started for: the registering user, or a signed-in user's re-authentication. */
  userId: string | null
  /** base64url, as the options carried it. */
  challenge: string
  /** Registration: the WebAuthn user id given to the authenticator. */
  userHandle?: string
  /** Registration: the session that asked, which must still be live to add the passkey. */
  sessionId?: string
}

export async function issueCeremonyChallenge(
  db: Executor,
  ceremony: Ceremony,
  c: CeremonyChallenge,
  expiresAt: Date,
): Promise<string> {
  const token = newToken()
  const { userId, ...data } = c
  await db
    .insertInto('verification')
    .values({
      id: newId(),
      purpose: ceremony,
      token_hash: hashToken(token),
      user_id: userId,
      data: json(data),
      expires_at: expiresAt,
    })
    .execute()
  return token
}

/** Uses the challenge up, whatever comes of the ceremony: null when it is unknown, used, expired or of another ceremony. */
export async function consumeCeremonyChallenge(
  db: Executor,
  ceremony: Ceremony,
  token: string,
  now: Date,
): Promise<CeremonyChallenge | null> {
  const row = await claimToken(db, token, ceremony, now)
  if (!row) return null
  const { challenge, userHandle, sessionId } = row.data as Record<string, unknown>
  if (typeof challenge !== 'string') return null
  return {
    userId: row.userId,
    challenge,
    ...(typeof userHandle === 'string' ? { userHandle } : {}),
    ...(typeof sessionId === 'string' ? { sessionId } : {}),
  }
}
