// Self-service on the signed-in user's own account, at parity with better-auth 1.6.34's core
// routes: name and image, the change of address, deletion, and the ways in (linked accounts).
import type { DB, Trx } from '../../../db/index.js'
import { updateProfile } from '../../profile/service.js'
import { recordUserEvent } from '../../shared/audit.js'
import type { RequestContext } from '../../shared/context.js'
import { AppError } from '../../shared/errors.js'
import type { EmailAuthDeps } from './deps.js'
import { maybeBootstrapOwner } from './bootstrap.js'
import { addressChangedMail, approveAddressChangeMail, deletionMail, LINK_LIFETIME_MS, newAddressMail } from '../links/mails.js'
import {
  consumeToken,
  invalidToken,
  issueToken,
  peekToken,
  revokeTokens,
  type VerificationRecord,
} from '../links/verification.js'
import { forUser } from '../password/password.js'
import { findPasswordHash, lockSessionOf } from '../core/queries.js'
import { findUserById, lockUser } from '../../user/queries.js'
import { assertDeletable, eraseAccount } from '../../user/erase.js'
import type { SessionUser, SignedInUser } from '../../user/types.js'
import { isFresh, notFresh } from '../session/fresh.js'
import { forgetEmailProofs, markSessionEmailProven } from '../session/queries.js'
import {
  accountsOfUser,
  deleteAccountOfUser,
  emailTaken,
  lockAccountsOfUser,
  replaceEmail,
  type LinkedAccount,
} from './queries.js'

/** The email flows' dependencies (emailAuthDepsOf builds them): self-service mails the same links. */
export type AccountDeps = EmailAuthDeps

const expiresIn = (deps: Pick<AccountDeps, 'clock'>, ms: number) => new Date(deps.clock.now().getTime() + ms)

// ---- update-user -------------------------------------------------------------------------------

/**
 * better-auth's update-user: name and image only, through the profile's one update. The address
 * changes only through change-email (its owner must prove it), so `email` is refused by name.
 */
export async function updateUser(
  deps: Pick<AccountDeps, 'db' | 'clock'>,
  ctx: RequestContext,
  user: SignedInUser,
  input: { name?: string; image?: string | null; email?: unknown },
): Promise<void> {
  if (input.email !== undefined) throw new AppError(400, 'EMAIL_CAN_NOT_BE_UPDATED', 'Email can not be updated')
  if (input.name === undefined && input.image === undefined) throw new AppError(400, 'BAD_REQUEST', 'No fields to update')
  await updateProfile(deps, ctx, user, { name: input.name, image: input.image })
}

// ---- change-email ------------------------------------------------------------------------------

type Mail = () => void

/**
 * Who may move the account to another address: every emailed proof (reset links, sign-in links and
 * codes) follows the address, so a stolen session alone must not do it. A session started within a
 * day (better-auth's freshAge, as for adding a passkey) may; an older one gives the password in the
 * body (an addition to better-auth's body: its client sends it as an extra field). A password
 * given is always checked, fresh session or not. Refusals are audited.
 */
export async function assertMayChangeAddress(
  deps: Pick<AccountDeps, 'db' | 'clock' | 'hasher'>,
  ctx: RequestContext,
  userId: string,
  session: { createdAt: Date },
  password: string | undefined,
): Promise<void> {
  let refusal: AppError | null = null
  if (password !== undefined) {
    const passwordHash = await findPasswordHash(deps.db, userId)
    if (!passwordHash) throw new AppError(400, 'CREDENTIAL_ACCOUNT_NOT_FOUND', 'Credential account not found')
    if (!(await deps.hasher.verify(passwordHash, password, forUser(ctx, userId))))
      refusal = new AppError(400, 'INVALID_PASSWORD', 'Invalid password')
  } else if (!isFresh(deps.clock, session)) {
    refusal = notFresh()
  }
  if (!refusal) return
  await recordUserEvent(deps.db, ctx, userId, 'auth.email_change_refused', { reason: refusal.code })
  throw refusal
}

/** better-auth refuses a "change" to the address the account already has. */
export function assertNewEmail(user: Pick<SessionUser, 'email'>, newEmail: string): void {
  if (newEmail === user.email) throw new AppError(400, 'BAD_REQUEST', 'Email is the same')
}

async function mailNewAddressLink(
  deps: AccountDeps,
  db: DB | Trx,
  user: { id: string; email: string },
  newEmail: string,
  callbackURL: string | undefined,
): Promise<Mail> {
  const token = await issueToken(db, 'change-email-verification', user.id, {
    expiresAt: expiresIn(deps, LINK_LIFETIME_MS.changeEmail),
    data: { email: user.email, newEmail, callbackURL: callbackURL ?? null },
  })
  return () => deps.mailer.sendInBackground(newAddressMail(deps.config, newEmail, token, callbackURL))
}

/**
 * The work of change-email, done after the reply (the same time whether the new address is taken
 * or not). A verified account approves from its current address first, taken address or not: its
 * holder reads that mailbox, so mailing only for a free address would tell them which addresses
 * have accounts; the approval then finds the address taken and mails no one. An unverified account
 * has nothing to approve from, so the new address gets its link at once (better-auth's order); a
 * taken one costs the same database work, a token nobody receives, and mails no one.
 */
export async function requestEmailChange(
  deps: AccountDeps,
  user: Pick<SessionUser, 'id' | 'email'>,
  sessionId: string,
  newEmail: string,
  callbackURL: string | undefined,
): Promise<void> {
  const mail = await deps.db.transaction().execute(async (trx): Promise<Mail | null> => {
    // After the reply, so checked again: a password reset (or a provider's claim) since the request
    // began ended the session and every pending link, and a link issued now would outlive them. The
    // user row, then the session, as those go: either the session is gone (nothing is issued) or the
    // reset waits and then ends this link too. The address and its verification are read afresh.
    const current = await lockUser(trx, { id: user.id }, ['email', 'email_verified'])
    if (!current || current.email !== user.email || !(await lockSessionOf(trx, user.id, sessionId))) return null
    if (!current.emailVerified) {
      if (await emailTaken(trx, newEmail)) {
        await issueToken(trx, 'change-email-verification', null, { expiresAt: expiresIn(deps, LINK_LIFETIME_MS.changeEmail) })
        return null
      }
      return mailNewAddressLink(deps, trx, user, newEmail, callbackURL)
    }
    const token = await issueToken(trx, 'change-email-confirmation', user.id, {
      expiresAt: expiresIn(deps, LINK_LIFETIME_MS.changeEmail),
      data: { email: user.email, newEmail, callbackURL: callbackURL ?? null },
    })
    return () => deps.mailer.sendInBackground(approveAddressChangeMail(deps.config, user.email, newEmail, token))
  })
  // Mail only for what committed.
  mail?.()
}

const dataOf = (record: VerificationRecord) => ({
  email: String(record.data.email ?? ''),
  newEmail: String(record.data.newEmail ?? ''),
  callbackURL: typeof record.data.callbackURL === 'string' ? record.data.callbackURL : undefined,
})

/**
 * The approval link's page: the address the change would move the account to, while the link is
 * live and the account still has the address it was mailed to. Changes nothing.
 */
export async function pendingApproval(deps: AccountDeps, token: string): Promise<string | null> {
  const record = await peekToken(deps.db, 'change-email-confirmation', token, deps.clock.now())
  if (!record) return null
  const { email, newEmail } = dataOf(record)
  return (await findUserById(deps.db, record.userId))?.email === email ? newEmail : null
}

/**
 * The approval page's button: the current address approves, without a session (its holder may
 * read the mail anywhere). The new address then gets its link. Throws INVALID_TOKEN.
 */
export async function approveWithLink(deps: AccountDeps, ctx: RequestContext, token: string): Promise<void> {
  // Looked at first, without spending it: whose account, so that its row is locked before the token is spent.
  const peeked = await peekToken(deps.db, 'change-email-confirmation', token, deps.clock.now())
  if (!peeked) throw invalidToken()
  const mail = await deps.db.transaction().execute(async (trx) => {
    await lockUser(trx, { id: peeked.userId }, ['id'])
    const record = await consumeToken(trx, 'change-email-confirmation', token, deps.clock.now())
    if (!record || record.userId !== peeked.userId) throw invalidToken()
    const next = await approveEmailChange(deps, trx, record)
    await recordUserEvent(trx, ctx, record.userId, 'auth.email_change_approved')
    return next
  })
  // Mail only for what committed.
  mail?.()
}

/**
 * The current address approved (its link was used, in `trx`): the new address gets its link. Stale
 * when the account's address changed since; a new address that is taken gets no link, with the
 * same answer and the same database work (a token nobody receives). Returns the mail to send once
 * the transaction commits.
 */
async function approveEmailChange(deps: AccountDeps, trx: Trx, record: VerificationRecord): Promise<Mail | null> {
  const { email, newEmail, callbackURL } = dataOf(record)
  const user = await findUserById(trx, record.userId)
  if (!user || user.email !== email) throw invalidToken()
  if (await emailTaken(trx, newEmail)) {
    await issueToken(trx, 'change-email-verification', null, { expiresAt: expiresIn(deps, LINK_LIFETIME_MS.changeEmail) })
    return null
  }
  return mailNewAddressLink(deps, trx, user, newEmail, callbackURL)
}

/**
 * The new address proved itself (its link was used, in `trx`): it becomes the account's address,
 * verified. Links still pending were mailed to the old address and end; the old address is told.
 */
export async function completeEmailChange(
  deps: AccountDeps,
  ctx: RequestContext,
  trx: Trx,
  record: VerificationRecord,
): Promise<Mail> {
  const { email, newEmail } = dataOf(record)
  const now = deps.clock.now()
  if (await emailTaken(trx, newEmail)) throw invalidToken()
  const fromVerified = (await findUserById(trx, record.userId))?.emailVerified === true
  const changed = await replaceEmail(trx, record.userId, email, newEmail, now)
  if (!changed) throw invalidToken() // the address changed since the mail was sent
  const tokensRevoked = await revokeTokens(trx, changed.id)
  // What the account's sessions proved was the old address's; the session that opened this link (it
  // must be one of the account's: verifyEmail) proved the new one.
  await forgetEmailProofs(trx, changed.id)
  if (ctx.actorId === changed.id && ctx.sessionId)
    await markSessionEmailProven(trx, { id: ctx.sessionId, userId: changed.id }, now)
  // No address in this event; the row keeps the old one in former_emails, which erasure scrubs from the log.
  await recordUserEvent(trx, ctx, changed.id, 'auth.email_changed', { tokensRevoked })
  await maybeBootstrapOwner(
    trx,
    { id: changed.id, email: newEmail, emailVerified: true },
    deps.config.bootstrapOwnerEmail,
    now,
    'mailbox',
    ctx.log,
  )
  const notice = await deps.notices.prepareAddressChange(trx, ctx, changed.id, { from: email, to: newEmail, fromVerified })
  return () => {
    notice()
    deps.mailer.sendInBackground(addressChangedMail(email, newEmail))
  }
}

// ---- delete-user -------------------------------------------------------------------------------

export type DeleteOutcome = 'deleted' | 'mailed'

/** Deletes the account with a deletion link's token, which must be this user's. */
async function eraseWithToken(deps: AccountDeps, ctx: RequestContext, user: SessionUser, token: string): Promise<void> {
  const now = deps.clock.now()
  // Another user's token is refused without being spent.
  const peeked = await peekToken(deps.db, 'delete-account', token, now)
  if (!peeked || peeked.userId !== user.id) throw invalidToken(404)
  await deps.db.transaction().execute(async (trx) => {
    // The user row first, the order of every writer of the account (a take-back revokes this token).
    await lockUser(trx, { id: user.id }, ['id'])
    const record = await consumeToken(trx, 'delete-account', token, now)
    if (!record || record.userId !== user.id) throw invalidToken(404)
    await eraseAccount(trx, user)
  })
  ctx.log.info('account deleted through its deletion link')
}

/**
 * better-auth's delete-user: with the password, the account goes at once (the same erasure as
 * DELETE /api/v1/me); with a deletion link's token, too; an account without a password is mailed
 * a single-use link (24 h) instead, since nothing else proves it is its owner asking.
 */
export async function deleteUser(
  deps: AccountDeps,
  ctx: RequestContext,
  user: SessionUser,
  input: { password?: string; token?: string; callbackURL: string },
): Promise<DeleteOutcome> {
  assertDeletable(user)
  const passwordHash = await findPasswordHash(deps.db, user.id)
  if (input.password !== undefined || passwordHash) {
    if (!passwordHash) throw new AppError(400, 'CREDENTIAL_ACCOUNT_NOT_FOUND', 'Credential account not found')
    if (input.password === undefined || !(await deps.hasher.verify(passwordHash, input.password, forUser(ctx, user.id)))) {
      await recordUserEvent(deps.db, ctx, user.id, 'account.delete_refused')
      throw new AppError(400, 'INVALID_PASSWORD', 'Invalid password')
    }
  }
  if (input.token !== undefined) {
    await eraseWithToken(deps, ctx, user, input.token)
    return 'deleted'
  }
  if (passwordHash) {
    await deps.db.transaction().execute((trx) => eraseAccount(trx, user))
    return 'deleted'
  }
  const token = await issueToken(deps.db, 'delete-account', user.id, {
    expiresAt: expiresIn(deps, LINK_LIFETIME_MS.deleteAccount),
  })
  deps.mailer.sendInBackground(deletionMail(deps.config, user.email, token, input.callbackURL))
  return 'mailed'
}

/** The deletion link (GET /api/auth/delete-user/callback), opened where its owner is signed in. */
export async function confirmDeletion(deps: AccountDeps, ctx: RequestContext, user: SessionUser, token: string): Promise<void> {
  assertDeletable(user)
  await eraseWithToken(deps, ctx, user, token)
}

// ---- linked accounts ---------------------------------------------------------------------------

export function listAccounts(deps: Pick<AccountDeps, 'db'>, userId: string): Promise<LinkedAccount[]> {
  return accountsOfUser(deps.db, userId)
}

const lastAccount = () => new AppError(400, 'FAILED_TO_UNLINK_LAST_ACCOUNT', "You can't unlink your last account")

/**
 * Removes one way in (the password, or the identity provider's link), never the last one that
 * signs in. Someone else's account is simply not among the user's: ACCOUNT_NOT_FOUND, as better-auth.
 */
export async function unlinkAccount(
  deps: Pick<AccountDeps, 'db' | 'notices'>,
  ctx: RequestContext,
  userId: string,
  input: { providerId: string; accountId?: string },
): Promise<void> {
  const notice = await deps.db.transaction().execute(async (trx) => {
    const accounts = await lockAccountsOfUser(trx, userId)
    if (accounts.length <= 1) throw lastAccount()
    const target = accounts.find(
      (a) => a.providerId === input.providerId && (input.accountId === undefined || a.accountId === input.accountId),
    )
    if (!target) throw new AppError(400, 'ACCOUNT_NOT_FOUND', 'Account not found')
    if (!accounts.some((a) => a !== target && a.signsIn)) throw lastAccount()
    await deleteAccountOfUser(trx, userId, target.id)
    await recordUserEvent(trx, ctx, userId, 'auth.account_unlinked', { providerId: target.providerId })
    return deps.notices.prepare(trx, ctx, userId, 'provider_unlinked')
  })
  notice()
}
