// Email and password accounts: sign-up and sign-in, password reset, email verification and the
// change of password.
import type { DB } from '../../../db/index.js'
import type { Config } from '../../config.js'
import type { ConsentInput } from '../../consent/schemas.js'
import { recordConsents } from '../../consent/service.js'
import type { Mailer } from '../../plugins/mailer.js'
import { recordUserEvent } from '../../shared/audit.js'
import type { Clock } from '../../shared/clock.js'
import type { RequestContext } from '../../shared/context.js'
import { AppError, unauthorized } from '../../shared/errors.js'
import { newId } from '../../shared/ids.js'
import { banHolds, bannedUser } from '../ban.js'
import { isBootstrapEmail, maybeBootstrapOwner } from '../bootstrap.js'
import { verifyEmailLink } from '../emailed-link.js'
import { isWeakHash, needsRehash, type PasswordHasher } from '../password/password.js'
import {
  clearPasswordResetRequired,
  CREDENTIAL,
  deleteAccountsBut,
  endSessionsOfUser,
  findCredentialByEmail,
  findPasswordHash,
  findUserByEmail,
  findUserById,
  insertAccount,
  insertUser,
  lockSessionOf,
  lockUser,
  markEmailVerified,
  replacePasswordHash,
  setEmailVerified,
  setPasswordHash,
  type UserWithFlags,
} from '../queries.js'
import { approveEmailChange, completeEmailChange } from '../account/service.js'
import { deleteChallenges, deleteTwoFactor, setTwoFactorEnabled } from '../two-factor/queries.js'
import { consumeToken, consumeTokenOf, invalidToken, issueToken, peekToken, revokeTokens } from '../verification.js'

export interface EmailAuthDeps {
  db: DB
  clock: Clock
  hasher: PasswordHasher
  mailer: Mailer
  config: Config['auth']
}

const RESET_TOKEN_TTL_MS = 60 * 60 * 1000
const VERIFY_TOKEN_TTL_MS = 24 * 60 * 60 * 1000

type Recipient = Pick<UserWithFlags, 'id' | 'email' | 'name'>

export const invalidCredentials = () => new AppError(401, 'INVALID_EMAIL_OR_PASSWORD', 'Invalid email or password')

const expiresIn = (deps: EmailAuthDeps, ms: number) => new Date(deps.clock.now().getTime() + ms)

export async function signUpWithEmail(
  deps: EmailAuthDeps,
  ctx: RequestContext,
  input: { name: string; email: string; password: string; image?: string | null; consents?: readonly ConsentInput[] },
): Promise<UserWithFlags> {
  // Hash before the transaction: Argon2 work never holds a database connection.
  const passwordHash = await deps.hasher.hashNew(input.password)
  const id = newId()
  try {
    await deps.db.transaction().execute(async (trx) => {
      await insertUser(trx, { id, name: input.name, email: input.email, image: input.image ?? null })
      await insertAccount(trx, { userId: id, providerId: CREDENTIAL, accountId: id, passwordHash })
      await recordUserEvent(trx, ctx, id, 'auth.sign_up')
      if (input.consents?.length) await recordConsents(trx, id, input.consents, ctx)
    })
  } catch (err) {
    if ((err as { code?: string }).code === '23505') {
      throw new AppError(422, 'USER_ALREADY_EXISTS', 'An account with this email already exists')
    }
    throw err
  }
  return (await findUserById(deps.db, id))!
}

export type SignInOutcome =
  | { ok: true; user: UserWithFlags }
  | { ok: false; reason: 'invalid' }
  | { ok: false; reason: 'reset_required' | 'email_not_verified'; user: UserWithFlags }

/**
 * Verifies email and password. An unknown email, an account without a password and a wrong
 * password cost the same Argon2 work and give the same answer, so nothing reveals which emails exist.
 */
export async function verifyEmailPassword(
  deps: EmailAuthDeps,
  ctx: RequestContext,
  email: string,
  password: string,
): Promise<SignInOutcome> {
  const found = await findCredentialByEmail(deps.db, email)
  if (!found?.passwordHash) {
    await deps.hasher.verifyDummy(password)
    await recordUserEvent(deps.db, ctx, found?.user.id ?? null, 'auth.sign_in_failed', { email })
    return { ok: false, reason: 'invalid' }
  }
  const { user, passwordHash } = found
  if (!(await deps.hasher.verify(passwordHash, password))) {
    await recordUserEvent(deps.db, ctx, user.id, 'auth.sign_in_failed')
    return { ok: false, reason: 'invalid' }
  }
  // Only a caller who knows the password learns of a ban; a banned user gets no mail either.
  if (await banHolds(deps.db, ctx, user.id, deps.clock.now())) {
    await recordUserEvent(deps.db, ctx, user.id, 'auth.sign_in_failed', { reason: 'banned' })
    throw bannedUser()
  }
  // Only a caller who knows the password learns that a reset is required.
  if (user.passwordResetRequired || isWeakHash(passwordHash)) return { ok: false, reason: 'reset_required', user }
  if (deps.config.requireEmailVerification && !user.emailVerified) return { ok: false, reason: 'email_not_verified', user }
  if (needsRehash(passwordHash)) {
    // The previous system's scrypt/bcrypt hash is replaced by Argon2id now that we hold the password.
    await setPasswordHash(deps.db, user.id, await deps.hasher.hash(password), deps.clock.now())
  }
  return { ok: true, user }
}

/**
 * Issues a reset token and mails its link. The link opens the web front end, which asks for the new
 * password and posts it with the token to /api/auth/reset-password: `${WEB_ORIGIN}/reset-password?token=...`,
 * or `redirectTo` (a relative path resolves against WEB_ORIGIN) with `token` added to its query.
 */
export async function sendPasswordResetMail(deps: EmailAuthDeps, user: Recipient, redirectTo?: string): Promise<void> {
  const token = await issueToken(deps.db, 'reset-password', user.id, { expiresAt: expiresIn(deps, RESET_TOKEN_TTL_MS) })
  const link = new URL(redirectTo ?? '/reset-password', deps.config.webOrigin)
  link.searchParams.set('token', token)
  deps.mailer.sendInBackground({
    to: user.email,
    subject: 'Reset your password',
    text: `Hello ${user.name},\n\nTo choose a new password, open this link within one hour:\n\n${link}\n\nIf you did not ask for this, ignore this email; your password stays as it is.\n`,
  })
}

/** Issues a verification token and mails its link, served by this API, which then redirects to `callbackURL`. */
export async function sendVerificationMail(deps: EmailAuthDeps, user: Recipient, callbackURL?: string): Promise<void> {
  // The token is bound to the address it was sent to: it verifies that address and no other.
  const token = await issueToken(deps.db, 'verify-email', user.id, {
    expiresAt: expiresIn(deps, VERIFY_TOKEN_TTL_MS),
    data: { email: user.email },
  })
  const link = verifyEmailLink(deps.config.baseUrl, token, callbackURL)
  deps.mailer.sendInBackground({
    to: user.email,
    subject: 'Verify your email address',
    text: `Hello ${user.name},\n\nTo confirm this email address, open this link within 24 hours:\n\n${link}\n`,
  })
}

/**
 * Mails a reset link when the email has an account; says nothing either way. Without an account
 * the same database work is done, a token nobody receives (purged when it expires), so not even
 * the requests that follow this one's after-reply work are slowed differently.
 */
export async function requestPasswordReset(deps: EmailAuthDeps, email: string, redirectTo?: string): Promise<void> {
  const user = await findUserByEmail(deps.db, email)
  if (user) await sendPasswordResetMail(deps, user, redirectTo)
  else await issueToken(deps.db, 'reset-password', null, { expiresAt: expiresIn(deps, RESET_TOKEN_TTL_MS) })
}

/** Mails a verification link when the email has an unverified account; says nothing either way (same work: see above). */
export async function requestVerification(deps: EmailAuthDeps, email: string, callbackURL?: string): Promise<void> {
  const user = await findUserByEmail(deps.db, email)
  if (user && !user.emailVerified) await sendVerificationMail(deps, user, callbackURL)
  else await issueToken(deps.db, 'verify-email', null, { expiresAt: expiresIn(deps, VERIFY_TOKEN_TTL_MS) })
}

/** Whether a reset token is live (better-auth's reset link checks before it hands the token on). */
export async function resetTokenIsLive(deps: EmailAuthDeps, token: string): Promise<boolean> {
  return (await peekToken(deps.db, 'reset-password', token, deps.clock.now())) !== null
}

/** The links of a change of address, which a session holder asks for. */
const CHANGE_OF_ADDRESS = ['change-email-confirmation', 'change-email-verification'] as const
/** What a password reset ends besides the sessions: older reset links and pending changes of address. */
const EVICTED_PURPOSES = ['reset-password', ...CHANGE_OF_ADDRESS] as const

/**
 * Sets the new password, ends every session of the user, every pending reset link and change of
 * address, and clears the reset requirement. The bootstrap address becomes owner (bootstrap.ts),
 * verified, with the new password as its only way in.
 */
export async function resetPassword(deps: EmailAuthDeps, ctx: RequestContext, token: string, newPassword: string): Promise<void> {
  // A bad token is refused before the Argon2 work, so garbage tokens cost almost nothing.
  if (!(await peekToken(deps.db, 'reset-password', token, deps.clock.now()))) throw invalidToken()
  const passwordHash = await deps.hasher.hashNew(newPassword)
  await deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now()
    const record = await consumeToken(trx, 'reset-password', token, now)
    if (!record) throw invalidToken()
    // The owner takes the account back when its address was never proven: the identity provider's
    // links and the second factor were set up before anyone proved it (perhaps by whoever
    // registered it first, waiting for its owner), and must not outlive the reset: the owner would
    // be asked for a code from the first holder's authenticator. The reset that makes the bootstrap
    // owner does the same: the address was perhaps proven by someone who never asked for the mail.
    const user = await findUserById(trx, record.userId)
    const unproven = user !== undefined && !user.emailVerified
    const becomesOwner =
      user !== undefined && user.role !== 'owner' && isBootstrapEmail(user.email, deps.config.bootstrapOwnerEmail)
    const takenBack = unproven || becomesOwner
    const removedAccounts = takenBack ? await deleteAccountsBut(trx, record.userId, 'password') : []
    if (takenBack) {
      await deleteTwoFactor(trx, record.userId)
      await setTwoFactorEnabled(trx, record.userId, false, now)
    }
    await setPasswordHash(trx, record.userId, passwordHash, now)
    await clearPasswordResetRequired(trx, record.userId, now)
    // Its only way in is now the mailbox holder's password, and every session ends below; the reset
    // proved the address too.
    if (becomesOwner) {
      if (!user.emailVerified) await setEmailVerified(trx, user.id, now)
      await maybeBootstrapOwner(trx, { ...user, emailVerified: true }, deps.config.bootstrapOwnerEmail, now, 'reset', ctx.log)
    }
    // Whoever held a session (perhaps the reason for the reset) is signed out everywhere, and a
    // sign-in with the old password that waits for its second factor ends too.
    const ended = await endSessionsOfUser(trx, record.userId)
    await deleteChallenges(trx, record.userId) // sign-ins with the old password still waiting for a code
    // Pending changes of address too: one asked for by whoever held a session would otherwise
    // move the account away from the owner who just took it back.
    // Every link, for the new owner: whoever registered the address first may have asked for any.
    await revokeTokens(trx, record.userId, becomesOwner ? undefined : EVICTED_PURPOSES)
    await recordUserEvent(trx, ctx, record.userId, 'auth.password_reset', {
      sessionsEnded: ended,
      ...(removedAccounts.length ? { removedAccounts } : {}),
      ...(takenBack && user.twoFactorEnabled ? { twoFactorRemoved: true } : {}),
    })
  })
}

/** What a verify-email link may be: better-auth mails that one link for every step of a change of address too. */
const VERIFY_LINK_PURPOSES = ['verify-email', 'change-email-confirmation', 'change-email-verification'] as const

/**
 * Uses a verify-email link: marks the email verified (never the bootstrap owner: bootstrap.ts), or takes the
 * next step of a change of address (src/auth/account/service.ts). Throws INVALID_TOKEN.
 */
export async function verifyEmail(deps: EmailAuthDeps, ctx: RequestContext, token: string): Promise<void> {
  let mail: (() => void) | null
  try {
    mail = await deps.db.transaction().execute(async (trx) => {
      const now = deps.clock.now()
      const record = await consumeTokenOf(trx, VERIFY_LINK_PURPOSES, token, now)
      if (!record) throw invalidToken()
      if (record.purpose === 'change-email-confirmation') return approveEmailChange(deps, trx, record)
      if (record.purpose === 'change-email-verification') return completeEmailChange(deps, ctx, trx, record)
      const verified = await markEmailVerified(trx, record.userId, String(record.data.email ?? ''), now)
      if (!verified) throw invalidToken() // the account's address changed since the mail was sent
      await recordUserEvent(trx, ctx, verified.id, 'auth.email_verified')
      await maybeBootstrapOwner(
        trx,
        { ...verified, emailVerified: true },
        deps.config.bootstrapOwnerEmail,
        now,
        'mailbox',
        ctx.log,
      )
      return null
    })
  } catch (err) {
    // The new address was taken between the check and the change: the link can no longer work.
    if ((err as { code?: string }).code === '23505') throw invalidToken()
    throw err
  }
  // Mail only for what committed.
  mail?.()
}

/**
 * Replaces the password after checking the current one. Every other session of the user ends
 * (docs/http-contract.md, "Sessions and cookies"): whoever else held one may be why the password
 * is changed, so pending changes of address (which a session asks for) end too. The current one stays.
 */
export async function changePassword(
  deps: EmailAuthDeps,
  ctx: RequestContext,
  input: { userId: string; currentSessionId: string; currentPassword: string; newPassword: string },
): Promise<UserWithFlags> {
  const stored = await findPasswordHash(deps.db, input.userId)
  if (!stored) throw new AppError(400, 'BAD_REQUEST', 'This account has no password yet: use password reset to set one')
  if (!(await deps.hasher.verify(stored, input.currentPassword)))
    throw new AppError(401, 'INVALID_PASSWORD', 'The current password is wrong')
  const passwordHash = await deps.hasher.hashNew(input.newPassword)
  await deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now()
    // Checked again where it is written: a password reset while the hashes ran ended this session
    // and replaced the password, and a stale change must not undo it (nor end the resetter's sessions).
    // The user row, the password row, then the session: resetPassword's order, so the two never deadlock.
    await lockUser(trx, input.userId)
    if (!(await replacePasswordHash(trx, input.userId, stored, passwordHash, now))) {
      throw new AppError(401, 'INVALID_PASSWORD', 'The current password is wrong')
    }
    if (!(await lockSessionOf(trx, input.userId, input.currentSessionId))) throw unauthorized()
    await clearPasswordResetRequired(trx, input.userId, now)
    const ended = await endSessionsOfUser(trx, input.userId, { except: input.currentSessionId })
    await deleteChallenges(trx, input.userId) // sign-ins with the old password still waiting for a code
    await revokeTokens(trx, input.userId, CHANGE_OF_ADDRESS)
    await recordUserEvent(trx, ctx, input.userId, 'auth.password_changed', { otherSessionsEnded: ended })
  })
  return (await findUserById(deps.db, input.userId))!
}
