// Email and password accounts: sign-up and sign-in, password reset, email verification and the
// change of password.
import type { Trx } from '../../../db/index.js'
import type { ConsentInput } from '../../consent/schemas.js'
import { recordConsents } from '../../consent/service.js'
import { recordUserEvent } from '../../shared/audit.js'
import type { PendingNotice } from '../security/notices.js'
import type { RequestContext } from '../../shared/context.js'
import { AppError, unauthorized } from '../../shared/errors.js'
import { newId } from '../../shared/ids.js'
import type { EmailAuthDeps } from '../account/deps.js'
import { banHolds, bannedUser } from '../core/ban.js'
import { isBootstrapEmail, maybeBootstrapOwner } from '../account/bootstrap.js'
import { LINK_LIFETIME_MS, passwordResetMail, verificationMail } from '../links/mails.js'
import { forAddress, forUser, isWeakHash, needsRehash } from '../password/password.js'
import {
  clearPasswordResetRequired,
  CREDENTIAL,
  endSessionsOfUser,
  findCredentialByEmail,
  findPasswordHash,
  insertAccount,
  insertUser,
  lockSessionOf,
  markEmailVerified,
  replacePasswordHash,
  setPasswordHash,
  setWaysInUnproven,
} from '../core/queries.js'
import { findUserByEmail, findUserById, lockUser } from '../../user/queries.js'
import type { UserWithFlags } from '../../user/types.js'
import { completeEmailChange } from '../account/service.js'
import { takeAccountBack, takesBack } from '../account/take-back.js'
import { waysInUnproven } from '../session/second-factor.js'
import { deleteChallenges } from '../links/challenges.js'
import { markSessionEmailProven } from '../session/queries.js'
import { consumeToken, invalidToken, issueToken, peekToken, revokeTokens } from '../links/verification.js'

type Recipient = Pick<UserWithFlags, 'id' | 'email'>

export const invalidCredentials = () => new AppError(401, 'INVALID_EMAIL_OR_PASSWORD', 'Invalid email or password')

const expiresIn = (deps: EmailAuthDeps, ms: number) => new Date(deps.clock.now().getTime() + ms)

export async function signUpWithEmail(
  deps: EmailAuthDeps,
  ctx: RequestContext,
  input: { name: string; email: string; password: string; image?: string | null; consents?: readonly ConsentInput[] },
): Promise<UserWithFlags> {
  // Hash before the transaction: Argon2 work never holds a database connection.
  const passwordHash = await deps.hasher.hashNew(input.password, forAddress(ctx, input.email))
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
    // Counted for the address asked about, as a real account's sign-in is counted for the account.
    await deps.hasher.verifyDummy(password, found ? forUser(ctx, found.user.id) : forAddress(ctx, email))
    await recordUserEvent(deps.db, ctx, found?.user.id ?? null, 'auth.sign_in_failed', { email })
    return { ok: false, reason: 'invalid' }
  }
  const { user, passwordHash } = found
  if (!(await deps.hasher.verify(passwordHash, password, forUser(ctx, user.id)))) {
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
    await setPasswordHash(deps.db, user.id, await deps.hasher.hash(password, forUser(ctx, user.id)), deps.clock.now())
  }
  return { ok: true, user }
}

/** Issues a reset token and mails its link (links/mails.ts). */
export async function sendPasswordResetMail(deps: EmailAuthDeps, user: Recipient, redirectTo?: string): Promise<void> {
  const token = await issueToken(deps.db, 'reset-password', user.id, {
    expiresAt: expiresIn(deps, LINK_LIFETIME_MS.resetPassword),
  })
  deps.mailer.sendInBackground(passwordResetMail(deps.config, user.email, token, redirectTo))
}

/** Issues a verification token and mails its link, served by this API, which then redirects to `callbackURL`. */
export async function sendVerificationMail(deps: EmailAuthDeps, user: Recipient, callbackURL?: string): Promise<void> {
  // The token is bound to the address it was sent to: it verifies that address and no other.
  const token = await issueToken(deps.db, 'verify-email', user.id, {
    expiresAt: expiresIn(deps, LINK_LIFETIME_MS.verifyEmail),
    data: { email: user.email },
  })
  deps.mailer.sendInBackground(verificationMail(deps.config, user.email, token, callbackURL))
}

/**
 * Mails a reset link when the email has an account; says nothing either way. Without an account
 * the same database work is done, a token nobody receives (purged when it expires), so not even
 * the requests that follow this one's after-reply work are slowed differently.
 */
export async function requestPasswordReset(deps: EmailAuthDeps, email: string, redirectTo?: string): Promise<void> {
  const user = await findUserByEmail(deps.db, email)
  if (user) await sendPasswordResetMail(deps, user, redirectTo)
  else await issueToken(deps.db, 'reset-password', null, { expiresAt: expiresIn(deps, LINK_LIFETIME_MS.resetPassword) })
}

/**
 * Mails a verification link when the email has an account, verified or not (opened in a session of
 * the account, the link proves the address for that session, which may then set up a second
 * factor); says nothing either way (same work: see above).
 */
export async function requestVerification(deps: EmailAuthDeps, email: string, callbackURL?: string): Promise<void> {
  const user = await findUserByEmail(deps.db, email)
  if (user) await sendVerificationMail(deps, user, callbackURL)
  else await issueToken(deps.db, 'verify-email', null, { expiresAt: expiresIn(deps, LINK_LIFETIME_MS.verifyEmail) })
}

/** Whether a reset token is live (better-auth's reset link checks before it hands the token on). */
export async function resetTokenIsLive(deps: EmailAuthDeps, token: string): Promise<boolean> {
  return (await peekToken(deps.db, 'reset-password', token, deps.clock.now())) !== null
}

/** The links of a change of address, which a session holder asks for. */
const CHANGE_OF_ADDRESS = ['change-email-confirmation', 'change-email-verification'] as const
/** What a password reset ends besides the sessions: older reset links and pending changes of address. */
const EVICTED_PURPOSES = ['reset-password', 'reset-password-code', ...CHANGE_OF_ADDRESS] as const

/**
 * Uses a reset link: the new password is set by completeReset. `browser`: the device ids of the
 * browser that uses it; returns them as its cookie keeps them now. Throws INVALID_TOKEN.
 */
export async function resetPassword(
  deps: EmailAuthDeps,
  ctx: RequestContext,
  input: { token: string; newPassword: string; browser: readonly string[] },
): Promise<string[]> {
  const { token, newPassword } = input
  // A bad token is refused before the Argon2 work, so garbage tokens cost almost nothing.
  const peeked = await peekToken(deps.db, 'reset-password', token, deps.clock.now())
  if (!peeked) throw invalidToken()
  // Parallel uses of one link hash one at a time: the account's one operation in flight.
  const passwordHash = await deps.hasher.hashNew(newPassword, forUser(ctx, peeked.userId))
  const done = await deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now()
    // The user row first, the order of every writer of the account; then the token is spent.
    await lockUser(trx, { id: peeked.userId }, ['id'])
    const record = await consumeToken(trx, 'reset-password', token, now)
    if (!record || record.userId !== peeked.userId) throw invalidToken()
    const user = await findUserById(trx, record.userId)
    if (!user) throw invalidToken()
    return completeReset(deps, ctx, trx, { user, passwordHash, browser: input.browser }, now)
  })
  done.notice()
  return done.devices
}

/**
 * The rest of a reset, in its transaction, once the mailbox was proven (a reset link or code) and
 * the user row locked: sets the new password, ends every session of the user, every pending reset
 * link or code and change of address, and clears the reset requirement. A second factor stays: the
 * new password signs in only with it (docs/http-contract.md, "Recovery"). An account whose ways in
 * nobody proved were its mailbox holder's and that has no second factor (take-back.ts), and the
 * bootstrap address as it becomes owner (account/bootstrap.ts), is taken back: the new password is
 * its only way in. Every known device is forgotten but `browser`, the one that proved the mailbox
 * (security/devices.ts): its device ids for the cookie are returned with the notice to mail once
 * this commits.
 */
export async function completeReset(
  deps: EmailAuthDeps,
  ctx: RequestContext,
  trx: Trx,
  reset: { user: UserWithFlags; passwordHash: string; browser: readonly string[] },
  now: Date,
): Promise<{ notice: PendingNotice; devices: string[] }> {
  const { user, passwordHash } = reset
  // Last, once a take-back forgot every device: the browser that proved the mailbox stays known.
  const keepOnlyThisBrowser = () => deps.devices.forgetAllBut(trx, user.id, reset.browser)
  await setPasswordHash(trx, user.id, passwordHash, now)
  await clearPasswordResetRequired(trx, user.id, now)
  // Provider links were perhaps set up by whoever registered the address before its owner proved
  // it; the bootstrap address was perhaps proven by someone who never asked for the mail. Either way
  // the mailbox holder's new password becomes the only way in.
  const becomesOwner = user.role !== 'owner' && isBootstrapEmail(user.email, deps.config.bootstrapOwnerEmail)
  if ((await takesBack(trx, user)) || becomesOwner) {
    const taken = await takeAccountBack(trx, user.id, 'password', { now, ip: ctx.ip })
    if (becomesOwner) {
      await maybeBootstrapOwner(trx, { ...user, emailVerified: true }, deps.config.bootstrapOwnerEmail, now, 'reset', ctx.log)
    }
    await recordUserEvent(trx, ctx, user.id, 'auth.password_reset', {
      sessionsEnded: taken.sessionsEnded,
      takenBack: true,
      roleBefore: taken.roleBefore,
      ...(taken.removedAccounts.length ? { removedAccounts: taken.removedAccounts } : {}),
    })
    const devices = await keepOnlyThisBrowser()
    return { notice: await deps.notices.prepare(trx, ctx, user.id, 'account_taken_back'), devices }
  }
  // Whoever held a session (perhaps the reason for the reset) is signed out everywhere; sign-ins
  // with the old password still in flight or waiting for their second factor can no longer start one.
  const ended = await endSessionsOfUser(trx, user.id)
  await deleteChallenges(trx, user.id)
  // Pending changes of address too: one asked for by whoever held a session would otherwise move
  // the account away from the owner who just took it back.
  await revokeTokens(trx, user.id, EVICTED_PURPOSES)
  await recordUserEvent(trx, ctx, user.id, 'auth.password_reset', { sessionsEnded: ended })
  const devices = await keepOnlyThisBrowser()
  return { notice: await deps.notices.prepare(trx, ctx, user.id, 'password_reset'), devices }
}

/**
 * What a verify-email link may be: better-auth mails that one link for the new address of a change
 * too (which needs the account's session). Never the current address's approval: a GET that acts
 * is what a mail scanner does (account/approval-page.ts has its page and button).
 */
const VERIFY_LINK_PURPOSES = ['verify-email', 'change-email-verification'] as const

/**
 * The new address's link of a change of address, opened without a session of the account: the
 * address must not move to an account its owner does not control (the account's password, second
 * factor and provider links are whoever asked for the change's). Nothing is spent: signed in, the
 * same link works.
 */
export const signInToConfirm = () =>
  new AppError(
    403,
    'SIGN_IN_TO_CONFIRM_EMAIL_CHANGE',
    'Open this link in the browser where you are signed in to the account whose address changes',
  )

/**
 * Uses a verify-email link: marks the email verified (never the bootstrap owner: account/bootstrap.ts), or confirms
 * the new address of a change of address (src/auth/account/service.ts). `signedInAs`: the user of the
 * session the link was opened with. Throws INVALID_TOKEN.
 */
export async function verifyEmail(
  deps: EmailAuthDeps,
  ctx: RequestContext,
  token: string,
  signedInAs: string | null,
): Promise<void> {
  // Looked at first, without spending it: whose account (its row is locked before the token is
  // spent, so two links of one account serialise), and a new address's link needs that account's session.
  const peeked = await peekToken(deps.db, VERIFY_LINK_PURPOSES, token, deps.clock.now())
  if (!peeked) throw invalidToken()
  if (peeked.purpose === 'change-email-verification' && peeked.userId !== signedInAs) throw signInToConfirm()
  let mail: (() => void) | null
  try {
    mail = await deps.db.transaction().execute(async (trx) => {
      const now = deps.clock.now()
      await lockUser(trx, { id: peeked.userId }, ['id'])
      const record = await consumeToken(trx, VERIFY_LINK_PURPOSES, token, now)
      if (!record || record.userId !== peeked.userId) throw invalidToken()
      if (record.purpose === 'change-email-verification') return completeEmailChange(deps, ctx, trx, record)
      const user = await findUserById(trx, record.userId)
      const email = String(record.data.email ?? '')
      const session = user ? inSessionOf(ctx, signedInAs, user.id) : null
      const verified = user && (await addressProven(trx, user, { email, session, now }))
      if (!verified) throw invalidToken() // the account's address changed since the mail was sent
      await recordUserEvent(trx, ctx, verified.id, 'auth.email_verified', signedInAs === record.userId ? {} : { signedIn: false })
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

/** The session of the account `userId` a code or link was used in, or null when used without one (or in another account's). */
export const inSessionOf = (
  ctx: RequestContext,
  signedInAs: string | null,
  userId: string,
): { id: string; userId: string } | null => (signedInAs === userId && ctx.sessionId ? { id: ctx.sessionId, userId } : null)

/**
 * Marks the address `email` verified, when the account (its row locked) still has it; undefined when
 * it changed since the code or link was sent. Proven in `session`, a session of the account, that
 * session may set up a second factor for a while (session/second-factor.ts), and the account's ways
 * in count as proven; without one (a mail scanner, a phone's mail app, or an owner of the address
 * who never made the account) they count as unproven, unless a session of the account had proven
 * them already: a link opened late by a scanner takes nothing back.
 */
export async function addressProven(
  trx: Trx,
  user: Pick<UserWithFlags, 'id' | 'emailVerified' | 'waysInUnproven'>,
  proof: { email: string; session: { id: string; userId: string } | null; now: Date },
): Promise<{ id: string; email: string } | undefined> {
  const verified = await markEmailVerified(trx, user.id, proof.email, proof.now)
  if (!verified) return undefined
  if (proof.session) await markSessionEmailProven(trx, proof.session, proof.now)
  if (proof.session || waysInUnproven(user)) {
    await setWaysInUnproven(trx, user.id, !proof.session)
  }
  return verified
}

/**
 * Replaces the password after checking the current one. Every other session of the user ends
 * (docs/http-contract.md, "Sessions and cookies"): whoever else held one may be why the password
 * is changed, so pending changes of address (which a session asks for) end too. The current one stays,
 * and its browser (`browser`: its device ids) becomes the account's one known device; its ids for
 * the cookie are returned with the user.
 */
export async function changePassword(
  deps: EmailAuthDeps,
  ctx: RequestContext,
  input: {
    userId: string
    currentSessionId: string
    currentPassword: string
    newPassword: string
    browser: readonly string[]
  },
): Promise<{ user: UserWithFlags; devices: string[] }> {
  const stored = await findPasswordHash(deps.db, input.userId)
  if (!stored) throw new AppError(400, 'BAD_REQUEST', 'This account has no password yet: use password reset to set one')
  if (!(await deps.hasher.verify(stored, input.currentPassword, forUser(ctx, input.userId))))
    throw new AppError(401, 'INVALID_PASSWORD', 'The current password is wrong')
  const passwordHash = await deps.hasher.hashNew(input.newPassword, forUser(ctx, input.userId))
  const done = await deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now()
    // Checked again where it is written: a password reset while the hashes ran ended this session
    // and replaced the password, and a stale change must not undo it (nor end the resetter's sessions).
    // The user row, the password row, then the session: resetPassword's order, so the two never deadlock.
    await lockUser(trx, { id: input.userId }, ['id'])
    if (!(await replacePasswordHash(trx, input.userId, stored, passwordHash, now))) {
      throw new AppError(401, 'INVALID_PASSWORD', 'The current password is wrong')
    }
    if (!(await lockSessionOf(trx, input.userId, input.currentSessionId))) throw unauthorized()
    await clearPasswordResetRequired(trx, input.userId, now)
    const ended = await endSessionsOfUser(trx, input.userId, { except: input.currentSessionId })
    await deleteChallenges(trx, input.userId) // sign-ins with the old password still waiting for a code
    await revokeTokens(trx, input.userId, CHANGE_OF_ADDRESS)
    const devices = await deps.devices.forgetAllBut(trx, input.userId, input.browser)
    await recordUserEvent(trx, ctx, input.userId, 'auth.password_changed', { otherSessionsEnded: ended })
    return { notice: await deps.notices.prepare(trx, ctx, input.userId, 'password_changed'), devices }
  })
  done.notice()
  return { user: (await findUserById(deps.db, input.userId))!, devices: done.devices }
}
