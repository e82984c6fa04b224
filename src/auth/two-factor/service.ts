// Two-factor authentication (TOTP and backup codes): turning it on and off, and the second step of a
// sign-in, which answers the challenge the sign-in step issued (src/auth/sign-in/challenge.ts, with
// the trusted devices that skip it). Rules in better-auth's twoFactor plugin's terms.
import type { DB } from '../../../db/index.js'
import { recordUserEvent } from '../../shared/audit.js'
import type { PendingNotice, SecurityNotices } from '../security/notices.js'
import type { Clock } from '../../shared/clock.js'
import type { RequestContext } from '../../shared/context.js'
import { AppError, unauthorized } from '../../shared/errors.js'
import { forUser, type PasswordHasher } from '../password/password.js'
import type { CheckedCredential } from '../session/sessions.js'
import { findPasswordHash, lockSessionOf, raiseCredentialEpoch } from '../core/queries.js'
import { findUserById, lockUser } from '../../user/queries.js'
import type { UserWithFlags } from '../../user/types.js'
import { assertEmailProven, lockProvenSession } from '../session/second-factor.js'
import { claimChallengeAttempt, consumeChallenge, type PendingLink } from '../links/challenges.js'
import { matchingStep, newBackupCodes, newTotpSecret, totpUri, type TwoFactorKeys } from './crypto.js'
import {
  acceptStep,
  claimCodeAttempt,
  claimSignInAttempt,
  clearSessionsTwoFactorVerified,
  deleteTwoFactor,
  findTwoFactor,
  lockSetup,
  markSecretVerified,
  markSessionTwoFactorVerified,
  putPendingSecret,
  replaceBackupCodes,
  resetCodeAttempts,
  setTwoFactorEnabled,
  useBackupCode,
} from './queries.js'

export interface TwoFactorDeps {
  db: DB
  clock: Clock
  hasher: PasswordHasher
  keys: TwoFactorKeys
}

/** What turning two-factor on or off also needs: the owner is mailed a security notice. */
type Noticing = TwoFactorDeps & { notices: SecurityNotices }

/** The issuer an authenticator app shows next to the account, unless enable names another. */
export const DEFAULT_ISSUER = 'Insight'
/** Wrong codes allowed on one sign-in challenge, and in a row on the signed-in confirm step. */
export const MAX_ATTEMPTS = 5
/**
 * Wrong codes in a row at sign-in, across challenges, before sign-in with the second factor locks for
 * LOCK_MS: whoever holds the password could otherwise start challenge after challenge (better-auth's
 * account lockout, NIST SP 800-63B 5.2.2).
 */
export const MAX_SIGN_IN_FAILURES = 10
export const LOCK_MS = 15 * 60 * 1000

export type Method = 'totp' | 'backup-code'

const tooManyAttempts = () =>
  new AppError(400, 'TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE', 'Too many attempts. Please request a new code.')
export const invalidChallenge = () => new AppError(401, 'INVALID_TWO_FACTOR_COOKIE', 'Invalid two factor cookie')
const invalidCode = (method: Method) =>
  method === 'totp'
    ? new AppError(401, 'INVALID_CODE', 'Invalid code')
    : new AppError(401, 'INVALID_BACKUP_CODE', 'Invalid backup code')
const totpNotEnabled = () => new AppError(400, 'TOTP_NOT_ENABLED', 'TOTP not enabled')
const notEnabled = () => new AppError(400, 'TWO_FACTOR_NOT_ENABLED', "Two factor isn't enabled")

/** The current password, as every two-factor change asks for it (attempts are limited per account by the route policy). */
async function checkPassword(deps: TwoFactorDeps, ctx: RequestContext, userId: string, password: string): Promise<void> {
  const stored = await findPasswordHash(deps.db, userId)
  if (!stored) {
    await deps.hasher.verifyDummy(password, forUser(ctx, userId))
    throw new AppError(400, 'BAD_REQUEST', 'This account has no password yet: use password reset to set one')
  }
  if (!(await deps.hasher.verify(stored, password, forUser(ctx, userId))))
    throw new AppError(400, 'INVALID_PASSWORD', 'Invalid password')
}

const hashCodes = (deps: TwoFactorDeps, codes: readonly string[]) => codes.map((c) => deps.keys.hashBackupCode(c))

/**
 * Starts setting two-factor up: a new secret (encrypted) and ten backup codes (hashed), shown once.
 * `twoFactorEnabled` stays false until a code from the app confirms it (confirmWithCode).
 */
export async function enableTwoFactor(
  deps: TwoFactorDeps,
  ctx: RequestContext,
  user: Pick<UserWithFlags, 'id' | 'email' | 'twoFactorEnabled'>,
  input: { password: string; issuer?: string },
): Promise<{ totpURI: string; backupCodes: string[] }> {
  // Before the password's Argon2 work; judged again under the lock below.
  if (!ctx.sessionId) throw unauthorized()
  const session = { id: ctx.sessionId, userId: user.id }
  await assertEmailProven(deps.db, session, deps.clock.now())
  await checkPassword(deps, ctx, user.id, input.password)
  // Replacing the secret of a working setup would lock out whoever has not rescanned: turn it off
  // first. Judged again where the secret is written (putPendingSecret): a confirmation racing this.
  const alreadyEnabled = () =>
    new AppError(400, 'TWO_FACTOR_ALREADY_ENABLED', 'Two factor is already enabled: disable it first to set it up again')
  if (user.twoFactorEnabled) throw alreadyEnabled()
  const secret = newTotpSecret()
  const backupCodes = newBackupCodes()
  await deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now()
    // The user row first, the order of every writer of the account: a deletion that committed
    // meanwhile leaves nobody to set up (401, not a foreign-key error).
    if (!(await lockUser(trx, { id: user.id }, ['id']))) throw unauthorized()
    if (!(await putPendingSecret(trx, user.id, deps.keys.encrypt(secret), now))) throw alreadyEnabled()
    await replaceBackupCodes(trx, user.id, hashCodes(deps, backupCodes))
    // A password reset or a sign-out while the password was checked ended this session: no setup
    // from it; nor from one whose proof of the address has lapsed (second-factor.ts). After the
    // setup's rows, as resetPassword goes, so the two never deadlock.
    if (!(await lockProvenSession(trx, session, now))) throw unauthorized()
    await recordUserEvent(trx, ctx, user.id, 'auth.two_factor.setup_started')
  })
  return { totpURI: totpUri(secret, user.email, input.issuer ?? DEFAULT_ISSUER), backupCodes }
}

/** The URI of the current secret again (to scan it on another device). */
export async function getTotpUri(
  deps: TwoFactorDeps,
  ctx: RequestContext,
  user: Pick<UserWithFlags, 'id' | 'email'>,
  password: string,
): Promise<{ totpURI: string }> {
  await checkPassword(deps, ctx, user.id, password)
  const row = await findTwoFactor(deps.db, user.id)
  if (!row) throw totpNotEnabled()
  return { totpURI: totpUri(deps.keys.decrypt(row.secret), user.email, DEFAULT_ISSUER) }
}

/** Ten new backup codes; the old ones stop working. */
export async function regenerateBackupCodes(
  deps: TwoFactorDeps,
  ctx: RequestContext,
  user: Pick<UserWithFlags, 'id' | 'twoFactorEnabled'>,
  password: string,
): Promise<string[]> {
  await checkPassword(deps, ctx, user.id, password)
  if (!user.twoFactorEnabled) throw notEnabled()
  const backupCodes = newBackupCodes()
  await deps.db.transaction().execute(async (trx) => {
    if (!(await lockUser(trx, { id: user.id }, ['id']))) throw unauthorized() // deleted meanwhile
    await replaceBackupCodes(trx, user.id, hashCodes(deps, backupCodes))
    await recordUserEvent(trx, ctx, user.id, 'auth.two_factor.backup_codes_regenerated')
  })
  return backupCodes
}

/**
 * Turns two-factor off: the secret, the backup codes, pending sign-in challenges and every trusted
 * device go, and no session of the user counts as having passed a second factor any more.
 */
export async function disableTwoFactor(deps: Noticing, ctx: RequestContext, userId: string, password: string): Promise<void> {
  await checkPassword(deps, ctx, userId, password)
  const notice = await deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now()
    await lockUser(trx, { id: userId }, ['id']) // first, as every writer of the account
    const { trustedDevices } = await deleteTwoFactor(trx, userId)
    await setTwoFactorEnabled(trx, userId, false, now)
    await clearSessionsTwoFactorVerified(trx, userId)
    await recordUserEvent(trx, ctx, userId, 'auth.two_factor.disabled', { trustedDevicesRevoked: trustedDevices })
    return deps.notices.prepare(trx, ctx, userId, 'two_factor_disabled')
  })
  notice()
}

/**
 * Checks a code inside the caller's transaction: a TOTP code valid now and later than the last one
 * accepted, or an unused backup code (used up by this check). Throws INVALID_CODE / INVALID_BACKUP_CODE.
 */
async function checkCode(
  deps: TwoFactorDeps,
  trx: Parameters<typeof acceptStep>[0],
  userId: string,
  secret: string,
  method: Method,
  code: string,
): Promise<void> {
  const now = deps.clock.now()
  if (method === 'totp') {
    const step = matchingStep(deps.keys.decrypt(secret), code, now)
    if (step === null || !(await acceptStep(trx, userId, step, now))) throw invalidCode(method)
    return
  }
  if (!(await useBackupCode(trx, userId, deps.keys.backupCodeCandidates(code)))) throw invalidCode(method)
  await resetCodeAttempts(trx, userId, now)
}

async function auditFailure(deps: TwoFactorDeps, ctx: RequestContext, userId: string, method: Method, err: unknown) {
  if (err instanceof AppError && (err.code === 'INVALID_CODE' || err.code === 'INVALID_BACKUP_CODE')) {
    await recordUserEvent(deps.db, ctx, userId, 'auth.two_factor.failed', { method })
  }
}

/**
 * A signed-in user's code. The first valid TOTP code confirms a pending setup (two-factor is on from
 * then); any valid code marks the current session as having passed a second factor. Five wrong codes
 * in a row and the setup must start again (enable) or, once on, wait for disable and enable.
 */
export async function verifyForSession(
  deps: Noticing,
  ctx: RequestContext,
  user: Pick<UserWithFlags, 'id' | 'twoFactorEnabled'>,
  sessionId: string,
  method: Method,
  code: string,
): Promise<UserWithFlags> {
  const row = await findTwoFactor(deps.db, user.id)
  if (!row) throw totpNotEnabled()
  // A backup code proves nothing about the authenticator app: it cannot confirm a setup.
  if (method === 'backup-code' && !row.verified) throw notEnabled()
  if (!(await claimCodeAttempt(deps.db, user.id, MAX_ATTEMPTS, deps.clock.now()))) throw tooManyAttempts()
  let notice: PendingNotice | undefined
  try {
    await deps.db.transaction().execute(async (trx) => {
      // Read before the transaction: a reset (or disable) since then ended the setup or the session,
      // and turning two-factor on without its secret would lock the account's holder out. The setup
      // first, then the session: resetPassword's order, so the two never deadlock. The user row
      // before them all, as every writer of the account takes it.
      // Turning it on needs this session's recent proof of the address, as enable did (second-factor.ts).
      if (!(await lockUser(trx, { id: user.id }, ['id']))) throw unauthorized()
      if (!(await lockSetup(trx, user.id, row.secret))) throw totpNotEnabled()
      const session = { id: sessionId, userId: user.id }
      const live = row.verified
        ? await lockSessionOf(trx, user.id, sessionId)
        : await lockProvenSession(trx, session, deps.clock.now())
      if (!live) throw unauthorized()
      await checkCode(deps, trx, user.id, row.secret, method, code)
      await markSessionTwoFactorVerified(trx, sessionId)
      if (!row.verified) {
        const now = deps.clock.now()
        await markSecretVerified(trx, user.id, now)
        await setTwoFactorEnabled(trx, user.id, true, now)
        // A sign-in whose first factor passed before this cannot be born without the second (beginSignIn).
        await raiseCredentialEpoch(trx, user.id)
        await recordUserEvent(trx, ctx, user.id, 'auth.two_factor.enabled')
        notice = await deps.notices.prepare(trx, ctx, user.id, 'two_factor_enabled')
      }
    })
  } catch (err) {
    await auditFailure(deps, ctx, user.id, method, err)
    throw err
  }
  notice?.()
  return (await findUserById(deps.db, user.id))!
}

/**
 * The second step of a sign-in: the challenge of the `two_factor` cookie and a code. Each try is
 * taken before the code is checked; the sixth is refused whatever the code. On success the challenge
 * is used up and the caller starts the session.
 */
export async function verifyForSignIn(
  deps: TwoFactorDeps,
  ctx: RequestContext,
  challengeToken: string,
  method: Method,
  code: string,
): Promise<{ user: UserWithFlags; rememberMe: boolean; method: string; credential: CheckedCredential; link?: PendingLink }> {
  const challenge = await claimChallengeAttempt(deps.db, challengeToken, MAX_ATTEMPTS, deps.clock.now())
  if (challenge === null) throw invalidChallenge()
  if (challenge === 'exhausted') throw tooManyAttempts()
  const row = await findTwoFactor(deps.db, challenge.userId)
  if (!row?.verified) throw invalidChallenge() // turned off since the challenge began
  const now = deps.clock.now()
  // The lock is read and the try counted in one statement: a check here and a count after the code
  // would let a burst of parallel guesses all pass the check (claimSignInAttempt).
  if (!(await claimSignInAttempt(deps.db, challenge.userId, MAX_SIGN_IN_FAILURES, new Date(now.getTime() + LOCK_MS), now))) {
    const lockedUntil = (await findTwoFactor(deps.db, challenge.userId))?.lockedUntil
    if (!lockedUntil) throw invalidChallenge() // turned off meanwhile
    throw new AppError(
      429,
      'ACCOUNT_TEMPORARILY_LOCKED',
      'Too many failed verification attempts. Your account is temporarily locked. Please try again later.',
      { retryAfter: Math.max(1, Math.ceil((lockedUntil.getTime() - now.getTime()) / 1000)) },
    )
  }
  try {
    await deps.db.transaction().execute(async (trx) => {
      // Used up in the same transaction as the code: a wrong code rolls both back, a right one spends both.
      if (!(await consumeChallenge(trx, challengeToken, challenge.userId))) throw invalidChallenge()
      await checkCode(deps, trx, challenge.userId, row.secret, method, code)
    })
  } catch (err) {
    await auditFailure(deps, ctx, challenge.userId, method, err)
    throw err
  }
  const user = await findUserById(deps.db, challenge.userId)
  if (!user) throw invalidChallenge()
  return {
    user,
    rememberMe: challenge.rememberMe,
    method: challenge.method,
    credential: { userId: user.id, epoch: challenge.epoch },
    ...(challenge.link ? { link: challenge.link } : {}),
  }
}
