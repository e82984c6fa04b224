// Signing in by proving the mailbox, without a password: an emailed one-time code (better-auth's
// email-otp) or an emailed sign-in link (its magic link). Both prove the same thing as a reset link:
// whoever uses them reads the address's mail. So they end the same way: an account nobody had
// proven was its mailbox holder's, and that has no second factor, is taken back first
// (take-back.ts), a new address gets a new account, and the session is born through the one sign-in
// step (sign-in/step.ts), which asks for a second factor the account has, on the credential
// epoch read under the user row's lock.
import type { Trx } from '../../../db/index.js'
import { recordUserEvent } from '../../shared/audit.js'
import type { RequestContext } from '../../shared/context.js'
import { newId } from '../../shared/ids.js'
import { banHolds, bannedUser } from '../core/ban.js'
import { maybeBootstrapOwner } from '../account/bootstrap.js'
import { takeAccountBack, takesBack } from '../account/take-back.js'
import type { EmailAuthDeps } from '../account/deps.js'
import { completeReset } from '../email/service.js'
import { type CodePurpose, type CodeStore, invalidCode } from '../links/codes.js'
import { codeMail, MAGIC_LINK_LIFETIME_MS, magicLinkMail } from '../links/mails.js'
import { consumeMagicLink, invalidToken, issueToken, peekMagicLink } from '../links/verification.js'
import { forAddress } from '../password/password.js'
import { findUserByEmail, findUserById, lockUser } from '../../user/queries.js'
import type { UserWithFlags } from '../../user/types.js'
import { insertUser } from '../core/queries.js'
import { addressProven, inSessionOf } from '../email/service.js'
import type { PendingNotice } from '../security/notices.js'

export interface MailboxDeps extends EmailAuthDeps {
  codes: CodeStore
}

/** better-auth's `type` of send-verification-otp, and the code purpose each one is. */
export const CODE_TYPES = {
  'sign-in': 'sign-in-code',
  'email-verification': 'verify-email-code',
  'forget-password': 'reset-password-code',
} as const satisfies Record<string, CodePurpose>
export type CodeType = keyof typeof CODE_TYPES

/** How a mailbox proof signs in, as the last-login-method cookie and the audit trail name it. */
export type MailboxMethod = 'email-otp' | 'magic-link'

/** A proven address's account for a sign-in: the user (epoch read under lock) and whether it was just created. */
export interface MailboxAccount {
  user: UserWithFlags
  isNewUser: boolean
}

/** The account, and the take-back's notice to mail once the transaction committed. */
type ProvenAccount = MailboxAccount & { notice?: PendingNotice }

const now = (deps: MailboxDeps) => deps.clock.now()

/** The user that has the address, its row locked: the first lock of every writer of an account. */
async function lockUserByEmail(trx: Trx, email: string): Promise<void> {
  const user = await findUserByEmail(trx, email)
  if (user) await lockUser(trx, { id: user.id }, ['id'])
}

/** Uses the address's `purpose` code, then `act`s, in one transaction that locks the address's user first. */
function useCode<T>(
  deps: MailboxDeps,
  purpose: CodePurpose,
  input: { email: string; otp: string },
  act: (trx: Trx) => Promise<T>,
): Promise<T> {
  return deps.codes.use(
    deps.db,
    { purpose, email: input.email, code: input.otp, now: () => now(deps) },
    { lockFirst: (trx) => lockUserByEmail(trx, input.email), act },
  )
}

/**
 * The account a verification or reset code was for. A code stored for an address without an
 * account was never mailed: nobody can know it.
 */
async function accountOfCode(trx: Trx, email: string): Promise<UserWithFlags> {
  const user = await findUserByEmail(trx, email)
  if (!user) throw invalidCode()
  return user
}

/**
 * Mails a code of `type` to the address, or does the same work and mails nothing. A sign-in code
 * goes to any address (signing in with it creates the account: sign-up is open); a verification or
 * reset code only to an account's (a verification code typed in a session of the account proves the
 * address for that session, which may then set up a second factor: verified or not, an account needs
 * one for each session that does). The answer is the same either way: nothing says whether an
 * account has the address.
 */
export async function sendCode(deps: MailboxDeps, email: string, type: CodeType): Promise<void> {
  const purpose = CODE_TYPES[type]
  const user = await findUserByEmail(deps.db, email)
  const mailed = type === 'sign-in' || user !== undefined
  const code = await deps.codes.issue(deps.db, purpose, email, user?.id ?? null, now(deps))
  if (mailed) deps.mailer.sendInBackground(codeMail(email, purpose, code))
}

/**
 * The account of an address whose mailbox was just proven, in the proof's transaction (the user
 * row locked first): a new, verified one when no account has it; one whose ways in nobody had
 * proven were its mailbox holder's, and without a second factor, is taken back: every way in but
 * this proof removed (better-auth does the same), the role lowered to member, the address mailed a
 * notice. One with a second factor is left as it is: the sign-in asks for it (sign-in/step.ts).
 * A banned account gets nothing (the proof is not spent).
 */
async function accountOfProvenAddress(
  deps: MailboxDeps,
  ctx: RequestContext,
  trx: Trx,
  input: { email: string; name?: string; image?: string | null; via: MailboxMethod },
): Promise<ProvenAccount> {
  const at = now(deps)
  const existing = await findUserByEmail(trx, input.email)
  if (!existing) {
    const id = newId()
    const name = input.name?.trim() || input.email.split('@', 1)[0]!
    await insertUser(trx, { id, name, email: input.email, image: input.image ?? null, emailVerified: true })
    await recordUserEvent(trx, ctx, id, 'auth.sign_up', { via: input.via })
    // The mailbox alone never makes the bootstrap owner (account/bootstrap.ts): this logs what will.
    await maybeBootstrapOwner(
      trx,
      { id, email: input.email, emailVerified: true },
      deps.config.bootstrapOwnerEmail,
      at,
      'mailbox',
      ctx.log,
    )
    return { user: (await findUserById(trx, id))!, isNewUser: true }
  }
  if (await banHolds(trx, ctx, existing.id, at)) throw bannedUser()
  if (await takesBack(trx, existing)) {
    const taken = await takeAccountBack(trx, existing.id, 'none', { now: at, ip: ctx.ip })
    await recordUserEvent(trx, ctx, existing.id, 'auth.account_taken_back', {
      via: input.via,
      sessionsEnded: taken.sessionsEnded,
      roleBefore: taken.roleBefore,
      ...(taken.removedAccounts.length ? { removedAccounts: taken.removedAccounts } : {}),
    })
    const notice = await deps.notices.prepare(trx, ctx, existing.id, 'account_taken_back')
    return { user: (await findUserById(trx, existing.id))!, isNewUser: false, notice }
  }
  return { user: existing, isNewUser: false }
}

/** Whether a failed insert was another sign-up of the same address that committed first. */
const isDuplicate = (err: unknown) => (err as { code?: string }).code === '23505'

/** sign-in/email-otp: the code proves the mailbox; the account is found, created or taken back. Throws INVALID_OTP & co. */
export async function signInWithCode(
  deps: MailboxDeps,
  ctx: RequestContext,
  input: { email: string; otp: string; name?: string; image?: string | null },
): Promise<MailboxAccount> {
  try {
    const { notice, ...account } = await useCode(deps, 'sign-in-code', input, (trx) =>
      accountOfProvenAddress(deps, ctx, trx, { ...input, via: 'email-otp' }),
    )
    notice?.()
    return account
  } catch (err) {
    if (isDuplicate(err)) throw invalidCode()
    throw err
  }
}

/**
 * email-otp/verify-email: marks the address verified. Used without the account's session (whoever
 * reads the mail, perhaps not whoever registered the account), the ways in count as unproven; used
 * with it, they count as proven. As with the verification link (email/service.ts, addressProven).
 */
export async function verifyEmailWithCode(
  deps: MailboxDeps,
  ctx: RequestContext,
  input: { email: string; otp: string },
  signedInAs: string | null,
): Promise<UserWithFlags> {
  return useCode(deps, 'verify-email-code', input, async (trx) => {
    const user = await accountOfCode(trx, input.email)
    const at = now(deps)
    await addressProven(trx, user, { email: user.email, session: inSessionOf(ctx, signedInAs, user.id), now: at })
    await recordUserEvent(trx, ctx, user.id, 'auth.email_verified', {
      via: 'code',
      ...(signedInAs === user.id ? {} : { signedIn: false }),
    })
    await maybeBootstrapOwner(trx, { ...user, emailVerified: true }, deps.config.bootstrapOwnerEmail, at, 'mailbox', ctx.log)
    return (await findUserById(trx, user.id))!
  })
}

/**
 * email-otp/reset-password: the code proves the mailbox; the reset is the reset link's
 * (completeReset), `browser` the device ids of the browser that proved it. Returns its ids for the cookie.
 */
export async function resetPasswordWithCode(
  deps: MailboxDeps,
  ctx: RequestContext,
  input: { email: string; otp: string; password: string; browser: readonly string[] },
): Promise<string[]> {
  // No live code, no Argon2 work (and no try is spent by looking).
  if (!(await deps.codes.isLive(deps.db, 'reset-password-code', input.email, now(deps)))) throw invalidCode()
  const passwordHash = await deps.hasher.hashNew(input.password, forAddress(ctx, input.email))
  const done = await useCode(deps, 'reset-password-code', input, async (trx) =>
    completeReset(
      deps,
      ctx,
      trx,
      { user: await accountOfCode(trx, input.email), passwordHash, browser: input.browser },
      now(deps),
    ),
  )
  done.notice()
  return done.devices
}

/** Where a sign-in link leads once used, resolved by the redirect rule when it was asked for. */
export interface MagicLinkUrls {
  callbackURL: string
  newUserCallbackURL?: string
}

/**
 * sign-in/magic-link: mails a sign-in link to any address (using it creates the account: sign-up
 * is open). The name given is kept for a new account; the redirect targets are kept with the token.
 */
export async function requestMagicLink(
  deps: MailboxDeps,
  input: { email: string; name?: string; urls: MagicLinkUrls; guest: string | null },
): Promise<void> {
  const user = await findUserByEmail(deps.db, input.email)
  const { email, name, urls, guest } = input
  const token = await issueToken(deps.db, 'magic-link', user?.id ?? null, {
    expiresAt: new Date(now(deps).getTime() + MAGIC_LINK_LIFETIME_MS),
    data: { email, ...(name ? { name } : {}), urls, ...(guest ? { guest } : {}) },
  })
  deps.mailer.sendInBackground(magicLinkMail(deps.config, input.email, token))
}

/** The address a live sign-in link signs in to, or null (its page says which before anyone presses its button). */
export async function magicLinkAddress(deps: MailboxDeps, token: string): Promise<string | null> {
  const record = await peekMagicLink(deps.db, token, now(deps))
  return record ? String(record.data.email) : null
}

/** The guest whose browser asked for a live sign-in link, or null (none did, or the link is dead). */
export async function magicLinkGuest(deps: MailboxDeps, token: string): Promise<string | null> {
  const record = await peekMagicLink(deps.db, token, now(deps))
  return typeof record?.data.guest === 'string' ? record.data.guest : null
}

/** Uses a sign-in link (its page's button): single use; throws INVALID_TOKEN. */
export async function signInWithMagicLink(
  deps: MailboxDeps,
  ctx: RequestContext,
  token: string,
): Promise<MailboxAccount & { urls: MagicLinkUrls }> {
  const peeked = await peekMagicLink(deps.db, token, now(deps))
  if (!peeked) throw invalidToken()
  const email = String(peeked.data.email)
  try {
    const { notice, ...account } = await deps.db.transaction().execute(async (trx) => {
      await lockUserByEmail(trx, email)
      const record = await consumeMagicLink(trx, token, now(deps))
      if (!record || record.data.email !== email) throw invalidToken()
      const name = typeof record.data.name === 'string' ? record.data.name : undefined
      const proven = await accountOfProvenAddress(deps, ctx, trx, { email, name, via: 'magic-link' })
      return { ...proven, urls: record.data.urls as MagicLinkUrls }
    })
    notice?.()
    return account
  } catch (err) {
    if (isDuplicate(err)) throw invalidToken()
    throw err
  }
}
