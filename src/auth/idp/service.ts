// Sign-in through the identity provider: the account rules once the provider has vouched for an identity.
import type { DB, Trx } from '../../../db/index.js'
import type { Config } from '../../config.js'
import { recordAudit, recordUserEvent } from '../../shared/audit.js'
import type { Clock } from '../../shared/clock.js'
import type { RequestContext } from '../../shared/context.js'
import { newId } from '../../shared/ids.js'
import { banHolds } from '../core/ban.js'
import { maybeBootstrapOwner } from '../account/bootstrap.js'
import { credentialEpochOf, insertAccount, insertUser, setEmailVerified } from '../core/queries.js'
import { findUserByEmail, findUserById, lockUser } from '../../user/queries.js'
import { takeAccountBack, takesBack } from '../account/take-back.js'
import type { PendingLink } from '../links/challenges.js'
import { secondFactorsOf } from '../session/second-factor.js'
import type { PendingNotice, SecurityNotices } from '../security/notices.js'
import type { IdpIdentity } from './oauth.js'
import { findUserBySubject, IDP } from './queries.js'

export interface IdpDeps {
  db: DB
  clock: Clock
  config: Config['auth']
  notices: SecurityNotices
}

export type IdpFailureCode =
  | 'access_denied'
  | 'state_mismatch'
  | 'invalid_code'
  | 'invalid_token'
  | 'email_not_verified'
  | 'email_missing'
  | 'invalid_email'
  | 'issuer_mismatch'
  | 'provider_unavailable'
  | 'provider_error'

export type IdpLinkFailureCode = 'unable_to_link_account' | "email_doesn't_match" | 'account_already_linked_to_different_user'

export type IdpLinkOutcome = { ok: true } | { ok: false; error: IdpLinkFailureCode }

export type IdpSignInOutcome =
  /**
   * `credentialEpoch`: read at the end of the transaction that judged the identity (sessions.ts).
   * `pendingLink`: the provider login of an account with a second factor, linked only once the
   * second step passed (sign-in/provider-link.ts).
   */
  | { ok: true; userId: string; isNewUser: boolean; credentialEpoch: number; pendingLink?: PendingLink }
  | { ok: false; error: 'email_not_verified' | 'email_missing' | 'BANNED_USER' }

/**
 * The account rules: the subject decides (the same `sub` is always the same user, whatever its
 * email is today); a new subject links to an existing user only on a provider-verified email,
 * else creates a member. A banned user is refused before anything is linked or created
 * (better-auth redirects with its admin plugin's code, `error=BANNED_USER`).
 */
export async function signInWithIdentity(deps: IdpDeps, ctx: RequestContext, identity: IdpIdentity): Promise<IdpSignInOutcome> {
  return afterCommit(async (notices) => {
    try {
      return await resolveAccount(deps, ctx, identity, notices)
    } catch (err) {
      // Two callbacks for the same new subject raced; the loser finds the winner's rows.
      if ((err as { code?: string }).code !== '23505') throw err
      notices.length = 0 // the failed attempt's, rolled back with it
      return resolveAccount(deps, ctx, identity, notices)
    }
  })
}

/** Runs `work`, then sends the security notices its committed transaction prepared. */
async function afterCommit<T>(work: (notices: PendingNotice[]) => Promise<T>): Promise<T> {
  const notices: PendingNotice[] = []
  const result = await work(notices)
  for (const notice of notices) notice()
  return result
}

function resolveAccount(
  deps: IdpDeps,
  ctx: RequestContext,
  identity: IdpIdentity,
  notices: PendingNotice[],
): Promise<IdpSignInOutcome> {
  const bootstrapEmail = deps.config.bootstrapOwnerEmail
  const { ip } = ctx
  return deps.db.transaction().execute(async (trx): Promise<IdpSignInOutcome> => {
    const outcome = await judgeIdentity(trx)
    // Read last, after any claim or promotion of this transaction raised it.
    return outcome.ok ? { ...outcome, credentialEpoch: await credentialEpochOf(trx, outcome.userId) } : outcome
  })

  async function judgeIdentity(trx: Trx): Promise<Judged> {
    const now = deps.clock.now()
    const linked = await findUserBySubject(trx, identity.sub)
    if (linked) {
      if (await banHolds(trx, ctx, linked.id, now)) return { ok: false, error: 'BANNED_USER' }
      // The user's email stays ours: a changed address at the provider does not rewrite it.
      if (identity.emailVerified && identity.email === linked.email) {
        await maybeBootstrapOwner(
          trx,
          { ...linked, emailVerified: true },
          bootstrapEmail,
          now,
          { login: { provider: IDP, subject: identity.sub } },
          ctx.log,
        )
      }
      return { ok: true, userId: linked.id, isNewUser: false }
    }

    if (!identity.email) return { ok: false, error: 'email_missing' }
    const found = await findUserByEmail(trx, identity.email)
    // The user row first, then read again: the claim below is judged on what it holds now.
    const existing = found && (await lockUser(trx, { id: found.id }, ['id'])) && (await findUserById(trx, found.id))

    if (existing) {
      // Linking on an unverified email would hand the account to whoever typed that address at the provider.
      if (!identity.emailVerified) {
        await recordAudit(trx, {
          actorId: null,
          action: 'auth.idp.link_refused',
          targetType: 'user',
          targetId: existing.id,
          ip,
          details: { reason: 'email_not_verified' },
        })
        return { ok: false, error: 'email_not_verified' }
      }
      // Only now that the provider proved the address: a ban is nobody else's business.
      if (await banHolds(trx, ctx, existing.id, now)) return { ok: false, error: 'BANNED_USER' }
      // An account with a second factor: the provider proved the mailbox, no more. Its login is
      // linked once the second step passed, with the session (nothing here for the bootstrap owner
      // either: a reset from the mailbox makes one). An abandoned second step leaves no link.
      if ((await secondFactorsOf(trx, existing)).length > 0) {
        const pendingLink = { providerId: IDP, subject: identity.sub, email: existing.email }
        return { ok: true, userId: existing.id, isNewUser: false, pendingLink }
      }
      await insertAccount(trx, { userId: existing.id, providerId: IDP, accountId: identity.sub, passwordHash: null })
      // Without a second factor: an account whose ways in are unproven is claimed (take-back.ts).
      if (await takesBack(trx, existing)) {
        await claimUnverifiedAccount(trx, existing.id, identity.sub, now, ip)
        notices.push(await deps.notices.prepare(trx, ctx, existing.id, 'account_taken_back'))
      }
      await recordUserEvent(trx, ctx, existing.id, 'auth.idp.account_linked')
      notices.push(await deps.notices.prepare(trx, ctx, existing.id, 'provider_linked'))
      // A claimed account's other ways in went with the claim; a verified one's may be its first holder's.
      await maybeBootstrapOwner(
        trx,
        { id: existing.id, email: existing.email, emailVerified: true },
        bootstrapEmail,
        now,
        { login: { provider: IDP, subject: identity.sub } },
        ctx.log,
      )
      return { ok: true, userId: existing.id, isNewUser: false }
    }

    const id = newId()
    await insertUser(trx, {
      id,
      name: identity.name ?? identity.email.split('@', 1)[0]!,
      email: identity.email,
      emailVerified: identity.emailVerified,
      image: identity.picture,
    })
    await insertAccount(trx, { userId: id, providerId: IDP, accountId: identity.sub, passwordHash: null })
    await recordUserEvent(trx, ctx, id, 'auth.sign_up', { via: IDP })
    await maybeBootstrapOwner(
      trx,
      { id, email: identity.email, emailVerified: identity.emailVerified },
      bootstrapEmail,
      now,
      { login: { provider: IDP, subject: identity.sub } },
      ctx.log,
    )
    return { ok: true, userId: id, isNewUser: true }
  }
}

type Judged = Exclude<IdpSignInOutcome, { ok: true }> | Omit<Extract<IdpSignInOutcome, { ok: true }>, 'credentialEpoch'>

/**
 * The provider vouches for an address whose ways in nobody had proven were its mailbox holder's.
 * Whoever registered it first (perhaps an attacker waiting for the real owner) loses every way in
 * (take-back.ts): only the provider identity just linked remains, and the address counts as verified.
 */
async function claimUnverifiedAccount(trx: Trx, userId: string, subject: string, now: Date, ip: string | null): Promise<void> {
  const taken = await takeAccountBack(trx, userId, { providerId: IDP, subject }, { now, ip })
  await recordAudit(trx, {
    actorId: null,
    action: 'auth.idp.unverified_account_claimed',
    targetType: 'user',
    targetId: userId,
    ip,
    details: {
      removedAccounts: taken.removedAccounts,
      sessionsRevoked: taken.sessionsEnded,
      tokensRevoked: taken.tokensRevoked,
      roleBefore: taken.roleBefore,
    },
  })
}

/**
 * link-social's callback: links the provider's subject to the signed-in user `userId`, with
 * better-auth's rules: the provider must vouch for the email, which must be the user's own; a
 * subject already linked to another user is refused (the same `sub` is always the same user).
 */
export async function linkIdentity(
  deps: IdpDeps,
  ctx: RequestContext,
  userId: string,
  identity: IdpIdentity,
): Promise<IdpLinkOutcome> {
  return afterCommit(async (notices) => {
    try {
      return await linkAccount(deps, ctx, userId, identity, notices)
    } catch (err) {
      // The same subject was linked concurrently; the retry finds it and judges it.
      if ((err as { code?: string }).code !== '23505') throw err
      notices.length = 0 // the failed attempt's, rolled back with it
      return linkAccount(deps, ctx, userId, identity, notices)
    }
  })
}

function linkAccount(
  deps: IdpDeps,
  ctx: RequestContext,
  userId: string,
  identity: IdpIdentity,
  notices: PendingNotice[],
): Promise<IdpLinkOutcome> {
  return deps.db.transaction().execute(async (trx): Promise<IdpLinkOutcome> => {
    const now = deps.clock.now()
    const linked = await findUserBySubject(trx, identity.sub)
    if (linked) return linked.id === userId ? { ok: true } : { ok: false, error: 'account_already_linked_to_different_user' }
    const user = await findUserById(trx, userId)
    if (!user || !identity.emailVerified) return { ok: false, error: 'unable_to_link_account' }
    if (identity.email !== user.email) return { ok: false, error: "email_doesn't_match" }
    await insertAccount(trx, { userId, providerId: IDP, accountId: identity.sub, passwordHash: null })
    // The provider vouches for the address the signed-in user holds.
    if (!user.emailVerified) await setEmailVerified(trx, userId, now)
    await recordUserEvent(trx, ctx, userId, 'auth.idp.account_linked', { via: 'link-social' })
    notices.push(await deps.notices.prepare(trx, ctx, userId, 'provider_linked'))
    // The provider vouches for the address, not for who else holds a way into the account.
    await maybeBootstrapOwner(
      trx,
      { id: userId, email: user.email, emailVerified: true },
      deps.config.bootstrapOwnerEmail,
      now,
      'mailbox',
      ctx.log,
    )
    return { ok: true }
  })
}
