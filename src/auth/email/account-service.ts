// Account features beyond sign-in: password reset, email verification, change password.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { recordAudit } from '../../shared/audit.js'
import { AppError } from '../../shared/errors.js'
import { maybeBootstrapOwner } from '../bootstrap.js'
import { endSessionsOfUser, findPasswordHash, findUserByEmail, findUserById, setPasswordHash, type UserWithFlags } from '../queries.js'
import { consumeToken, issueToken, peekToken, RESET_TOKEN_TTL_MS, revokeTokens, VERIFY_TOKEN_TTL_MS } from './verification.js'

type Recipient = Pick<UserWithFlags, 'id' | 'email' | 'name'>

const invalidToken = () => new AppError(400, 'INVALID_TOKEN', 'The link is invalid, used or expired')

/**
 * The reset link opens the web front end, which asks for the new password and posts it with the
 * token to /api/auth/reset-password: `${WEB_ORIGIN}/reset-password?token=...`, or `redirectTo`
 * (a relative path resolves against WEB_ORIGIN) with `token` added to its query.
 */
export function resetLink(app: FastifyInstance, token: string, redirectTo?: string): string {
  const url = new URL(redirectTo ?? '/reset-password', app.config.auth.webOrigin)
  url.searchParams.set('token', token)
  return url.toString()
}

/** The verification link is served by this API, which then redirects to `callbackURL`. */
export function verificationLink(app: FastifyInstance, token: string, callbackURL?: string): string {
  const url = new URL('/api/auth/verify-email', app.config.auth.baseUrl)
  url.searchParams.set('token', token)
  if (callbackURL) url.searchParams.set('callbackURL', callbackURL)
  return url.toString()
}

/**
 * Issues a reset token and mails its link. `takeBudget`: the caller is not a mail route whose
 * per-email limit already counted this mail (e.g. a sign-in that found a reset required).
 */
export async function sendPasswordResetMail(
  app: FastifyInstance,
  request: FastifyRequest,
  user: Recipient,
  options: { redirectTo?: string; takeBudget: boolean },
): Promise<void> {
  if (options.takeBudget && !(await app.takeMailBudget(request, user.email))) {
    request.log.info('password reset mail skipped: hourly mail budget of this address is spent')
    return
  }
  const token = await issueToken(app.db, 'reset-password', user.id, { now: app.clock.now(), ttlMs: RESET_TOKEN_TTL_MS })
  const link = resetLink(app, token, options.redirectTo)
  app.mailer.sendInBackground({
    to: user.email,
    subject: 'Reset your password',
    text: `Hello ${user.name},\n\nTo choose a new password, open this link within one hour:\n\n${link}\n\nIf you did not ask for this, ignore this email; your password stays as it is.\n`,
  })
}

export async function sendVerificationMail(
  app: FastifyInstance,
  request: FastifyRequest,
  user: Recipient,
  options: { callbackURL?: string; takeBudget: boolean },
): Promise<void> {
  if (options.takeBudget && !(await app.takeMailBudget(request, user.email))) {
    request.log.info('verification mail skipped: hourly mail budget of this address is spent')
    return
  }
  // The token is bound to the address it was sent to: it verifies that address and no other.
  const token = await issueToken(app.db, 'verify-email', user.id, {
    now: app.clock.now(),
    ttlMs: VERIFY_TOKEN_TTL_MS,
    data: { email: user.email },
  })
  const link = verificationLink(app, token, options.callbackURL)
  app.mailer.sendInBackground({
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
export async function requestPasswordReset(app: FastifyInstance, request: FastifyRequest, email: string, redirectTo?: string): Promise<void> {
  const user = await findUserByEmail(app.db, email)
  if (user) await sendPasswordResetMail(app, request, user, { redirectTo, takeBudget: false })
  else await issueToken(app.db, 'reset-password', null, { now: app.clock.now(), ttlMs: RESET_TOKEN_TTL_MS })
}

/** Mails a verification link when the email has an unverified account; says nothing either way (same work: see above). */
export async function requestVerification(app: FastifyInstance, request: FastifyRequest, email: string, callbackURL?: string): Promise<void> {
  const user = await findUserByEmail(app.db, email)
  if (user && !user.emailVerified) await sendVerificationMail(app, request, user, { callbackURL, takeBudget: false })
  else await issueToken(app.db, 'verify-email', null, { now: app.clock.now(), ttlMs: VERIFY_TOKEN_TTL_MS })
}

/** Sets the new password, ends every session of the user and clears the reset requirement. */
export async function resetPassword(app: FastifyInstance, request: FastifyRequest, token: string, newPassword: string): Promise<void> {
  // A bad token is refused before the Argon2 work, so garbage tokens cost almost nothing.
  if (!(await peekToken(app.db, 'reset-password', token, app.clock.now()))) throw invalidToken()
  const passwordHash = await app.hasher.hash(newPassword)
  await app.db.transaction().execute(async (trx) => {
    const now = app.clock.now()
    const record = await consumeToken(trx, 'reset-password', token, now)
    if (!record) throw invalidToken()
    await setPasswordHash(trx, record.userId, passwordHash, now)
    await trx.updateTable('user').set({ password_reset_required: false, updated_at: now }).where('id', '=', record.userId).execute()
    // Whoever held a session (perhaps the reason for the reset) is signed out everywhere.
    const ended = await endSessionsOfUser(trx, record.userId)
    await revokeTokens(trx, 'reset-password', record.userId)
    await recordAudit(trx, {
      actorId: record.userId, action: 'auth.password_reset', targetType: 'user', targetId: record.userId,
      ip: request.ip, details: { sessionsEnded: ended },
    })
  })
}

/** Marks the email verified (and makes the bootstrap owner). Returns the user, or throws INVALID_TOKEN. */
export async function verifyEmail(app: FastifyInstance, request: FastifyRequest, token: string): Promise<UserWithFlags> {
  const userId = await app.db.transaction().execute(async (trx) => {
    const now = app.clock.now()
    const record = await consumeToken(trx, 'verify-email', token, now)
    if (!record) throw invalidToken()
    const verified = await trx
      .updateTable('user')
      .set({ email_verified: true, updated_at: now })
      .where('id', '=', record.userId)
      .where('email', '=', String(record.data.email ?? ''))
      .returning(['id', 'email'])
      .executeTakeFirst()
    if (!verified) throw invalidToken() // the account's address changed since the mail was sent
    await recordAudit(trx, { actorId: verified.id, action: 'auth.email_verified', targetType: 'user', targetId: verified.id, ip: request.ip })
    await maybeBootstrapOwner(trx, { id: verified.id, email: verified.email, emailVerified: true }, app.config.auth.bootstrapOwnerEmail)
    return verified.id
  })
  return (await findUserById(app.db, userId))!
}

/**
 * Replaces the password after checking the current one. Every other session of the user ends
 * (API.md §2): whoever else held one may be why the password is changed. The current one stays.
 */
export async function changePassword(
  app: FastifyInstance,
  request: FastifyRequest,
  input: { userId: string; currentSessionId: string; currentPassword: string; newPassword: string },
): Promise<UserWithFlags> {
  const stored = await findPasswordHash(app.db, input.userId)
  if (!stored) {
    throw new AppError(400, 'BAD_REQUEST', 'This account has no password yet: use password reset to set one')
  }
  if (!(await app.hasher.verify(stored, input.currentPassword))) {
    throw new AppError(401, 'INVALID_PASSWORD', 'The current password is wrong')
  }
  const passwordHash = await app.hasher.hash(input.newPassword)
  await app.db.transaction().execute(async (trx) => {
    const now = app.clock.now()
    await setPasswordHash(trx, input.userId, passwordHash, now)
    await trx.updateTable('user').set({ password_reset_required: false, updated_at: now }).where('id', '=', input.userId).execute()
    const ended = await endSessionsOfUser(trx, input.userId, { except: input.currentSessionId })
    await recordAudit(trx, {
      actorId: input.userId, action: 'auth.password_changed', targetType: 'user', targetId: input.userId,
      ip: request.ip, details: { otherSessionsEnded: ended },
    })
  })
  return (await findUserById(app.db, input.userId))!
}
