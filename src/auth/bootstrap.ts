// BOOTSTRAP_OWNER_EMAIL: a fresh deployment gets its first owner without a shell. Proving the
// mailbox is not enough on its own: whoever signed up first with the address chose its password,
// and the real owner may open a verification mail that sign-up sent (a genuine mail of ours) without
// having asked for it. So the account becomes owner only when the mailbox is proven and no password
// someone else may have chosen survives: the link is opened in a browser signed in to the account,
// or the password is reset from the mailbox, or the account has no password at all (an identity
// provider's account, or an unverified one the provider's proof just took back from its first holder).
import type { FastifyBaseLogger } from 'fastify'
import type { DB, Trx } from '../../db/index.js'
import type { Clock } from '../shared/clock.js'
import { findPasswordHash, findUserByEmail, lockRoleOfVerifiedUser } from './queries.js'
import { changeRole } from './roles.js'

/**
 * Who proved the mailbox, as far as the caller knows:
 * - `'holder'`: the one who holds the account's password too (a link opened in a browser signed in
 *   to the account, a password reset, a provider linked from a session);
 * - `'anyone'`: perhaps someone else (a link opened without the account's session, a provider
 *   sign-in, start-up), so an account with a password is not promoted.
 */
export type MailboxProof = 'holder' | 'anyone'

/** What an operator reads when the bootstrap address was proven but the account was not promoted. */
const NEEDS_HOLDER =
  'BOOTSTRAP_OWNER_EMAIL: the address is proven, but the account has a password its prover may not hold; ' +
  'it becomes owner once the password is reset from that mailbox, or a verification link is opened in a browser signed in to it'

/**
 * Makes `user` the owner when its verified email is the bootstrap email (see above). Call it in
 * the transaction that proves the address. Returns what happened; 'needs-holder' (logged) means the
 * address is the bootstrap one but the account keeps a password nobody proved here.
 */
export async function maybeBootstrapOwner(
  trx: Trx,
  user: { id: string; email: string; emailVerified: boolean },
  bootstrapEmail: string | undefined,
  now: Date,
  proof: MailboxProof,
  log: FastifyBaseLogger,
): Promise<'promoted' | 'needs-holder' | 'no'> {
  if (!bootstrapEmail || !user.emailVerified || user.email.toLowerCase() !== bootstrapEmail.toLowerCase()) return 'no'
  const role = await lockRoleOfVerifiedUser(trx, user.id)
  if (!role || role === 'owner') return 'no'
  if (proof === 'anyone' && (await findPasswordHash(trx, user.id)) !== null) {
    log.warn(NEEDS_HOLDER)
    return 'needs-holder'
  }
  // A promotion (never a demotion): changeRole ends no session, and audits it like every role change.
  await changeRole(trx, { userId: user.id, from: role, to: 'owner', actorId: null, ip: null, via: 'bootstrap_owner_email', now })
  return 'promoted'
}

/** At start-up: the existing, verified account with the bootstrap email becomes owner if nobody else may hold its password. */
export async function bootstrapOwnerAtStartup(
  deps: { db: DB; clock: Clock; log: FastifyBaseLogger },
  email: string | undefined,
): Promise<void> {
  if (!email) return
  const outcome = await deps.db.transaction().execute(async (trx) => {
    const user = await findUserByEmail(trx, email)
    if (!user) return 'absent' as const
    if (!user.emailVerified) return 'unverified' as const
    return maybeBootstrapOwner(trx, user, email, deps.clock.now(), 'anyone', deps.log)
  })
  if (outcome === 'promoted') deps.log.info({ email }, 'BOOTSTRAP_OWNER_EMAIL: account promoted to owner')
  else if (outcome === 'absent' || outcome === 'unverified') {
    deps.log.info(
      { email },
      `BOOTSTRAP_OWNER_EMAIL: account ${outcome}; it becomes owner once it has signed up and verified its email`,
    )
  }
}
