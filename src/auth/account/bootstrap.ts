// BOOTSTRAP_OWNER_EMAIL: a fresh deployment gets its first owner without a shell. Proving the
// mailbox is not enough on its own: whoever registered the address first (a sign-up with a
// password, a provider sign-in, a change of address) holds a way into the account, a session that
// outlives that way in, a second factor, and the real owner may open a mail of ours they never
// asked for. A session proves nothing either: it may have come through a way in that is gone. So
// the account becomes owner only in a step that proves the mailbox and takes the account back,
// leaving the prover's way in as the only one: a password reset (resetPassword removes provider
// logins, ends every session and pending link), or a provider sign-in through the account's only
// login (here: sessions, sign-ins in flight and pending links go). A second factor stays (take-back.ts):
// the new owner's sign-in still asks for it, so whoever holds the mailbox but not the second factor
// holds no session, owner or not.
import type { FastifyBaseLogger } from 'fastify'
import type { DB, Trx } from '../../../db/index.js'
import { takeAccountBack } from './take-back.js'
import { waysIn } from '../core/queries.js'
import { findUserByEmail, lockUser } from '../../user/queries.js'
import { changeRole } from './roles.js'

/**
 * How the address was just proven:
 * - `'mailbox'`: a mailed link, or a provider linked from a session: the mailbox, not who holds the account;
 * - `'reset'`: a password reset, which has left its new password as the only way in;
 * - `{ login }`: a provider sign-in, which counts when that login is the account's only way in.
 */
export type MailboxProof = 'mailbox' | 'reset' | { login: { provider: string; subject: string } }

/** What an operator reads when the bootstrap address was proven but the account was not promoted. */
const NEEDS_RESET =
  'BOOTSTRAP_OWNER_EMAIL: the account becomes owner once its password is reset from that mailbox ' +
  '("forgot password"), or at a sign-in through the identity provider when that is its only way in'

/** Whether `email` is the bootstrap owner's address. */
export const isBootstrapEmail = (email: string, bootstrapEmail: string | undefined): boolean =>
  bootstrapEmail !== undefined && email.toLowerCase() === bootstrapEmail.toLowerCase()

/**
 * Makes `user` the owner when its verified email is the bootstrap email and `proof` leaves the
 * prover holding the only way in (see above). Call it in the transaction that proves the address.
 * Returns what happened; 'needs-reset' (logged) means the address is the bootstrap one but the
 * proof does not show who holds the account.
 */
export async function maybeBootstrapOwner(
  trx: Trx,
  user: { id: string; email: string; emailVerified: boolean },
  bootstrapEmail: string | undefined,
  now: Date,
  proof: MailboxProof,
  log: FastifyBaseLogger,
): Promise<'promoted' | 'needs-reset' | 'no'> {
  if (!user.emailVerified || !isBootstrapEmail(user.email, bootstrapEmail)) return 'no'
  // Still verified, read under the lock that a promotion holds until it commits.
  const locked = await lockUser(trx, { id: user.id }, ['role', 'email_verified'])
  const role = locked?.emailVerified ? locked.role : undefined
  if (!role || role === 'owner') return 'no'
  if (proof === 'mailbox' || (proof !== 'reset' && !(await onlyWayIn(trx, user.id, proof.login)))) {
    log.warn(NEEDS_RESET)
    return 'needs-reset'
  }
  let from = role
  if (proof !== 'reset') {
    // The provider's login stays (it is the only way in); what got in before it (perhaps through a
    // way in given up since) goes: sessions, sign-ins waiting for a second factor, emailed links. A
    // reset took the account back already. The take-back leaves the account a member.
    const login = { providerId: proof.login.provider, subject: proof.login.subject }
    await takeAccountBack(trx, user.id, login, { now, ip: null })
    from = 'member'
  }
  // A promotion (never a demotion): changeRole ends no session, and audits it like every role change.
  await changeRole(trx, { userId: user.id, from, to: 'owner', actorId: null, ip: null, via: 'bootstrap_owner_email', now })
  return 'promoted'
}

/** Whether the provider login is the account's only way in: no password, no other provider login. */
async function onlyWayIn(trx: Trx, userId: string, login: { provider: string; subject: string }): Promise<boolean> {
  const ways = await waysIn(trx, userId)
  return ways.length === 1 && ways[0]!.providerId === login.provider && ways[0]!.accountId === login.subject
}

/**
 * At start-up: says what the bootstrap address still needs. Nobody is promoted here: nothing at
 * start-up shows who holds an account's ways in.
 */
export async function reportBootstrapOwner(deps: { db: DB; log: FastifyBaseLogger }, email: string | undefined): Promise<void> {
  if (!email) return
  const user = await findUserByEmail(deps.db, email)
  if (user?.role === 'owner') return
  deps.log.info(
    { email },
    user
      ? NEEDS_RESET
      : 'BOOTSTRAP_OWNER_EMAIL: no account yet; sign up with this address, then reset its password from the mailbox',
  )
}
