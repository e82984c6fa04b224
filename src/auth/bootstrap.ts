// BOOTSTRAP_OWNER_EMAIL: a fresh deployment gets its first owner without a shell. Proving the
// mailbox is not enough on its own: whoever registered the address first (a sign-up with a
// password, a provider sign-in, a change of address) holds a way into the account, and the real
// owner may open a mail of ours they never asked for (the sign-up's verification link, a change of
// address's confirmation). So the account becomes owner only when the one who proves the mailbox
// holds every way in: the link is opened in a browser signed in to the account, or a password reset
// takes the account back (resetPassword removes its other ways in), or a provider sign-in proves the
// address through the account's only way in.
import type { FastifyBaseLogger } from 'fastify'
import type { DB, Trx } from '../../db/index.js'
import type { Clock } from '../shared/clock.js'
import { findUserByEmail, lockRoleOfVerifiedUser, waysIn } from './queries.js'
import { changeRole } from './roles.js'

/**
 * How the address was just proven:
 * - `'holder'`: by the one who holds every way in: a link opened in a browser signed in to the
 *   account, a provider linked from such a browser, a password reset (which removes the rest);
 * - `'link'`: a mailed link opened without the account's session, perhaps by someone who never asked;
 * - a provider sign-in: it counts when that provider login is the account's only way in.
 */
export type MailboxProof = 'holder' | 'link' | { provider: string; subject: string }

/** What an operator reads when the bootstrap address was proven but the account was not promoted. */
const NEEDS_HOLDER =
  'BOOTSTRAP_OWNER_EMAIL: the address is proven, but perhaps not by whoever holds the way in to the account; ' +
  'it becomes owner once its password is reset from that mailbox, or a verification link is opened in a browser signed in to it'

/** Whether `email` is the bootstrap owner's address. */
export const isBootstrapEmail = (email: string, bootstrapEmail: string | undefined): boolean =>
  bootstrapEmail !== undefined && email.toLowerCase() === bootstrapEmail.toLowerCase()

/**
 * Makes `user` the owner when its verified email is the bootstrap email and `proof` shows the
 * prover holds every way in (see above). Call it in the transaction that proves the address.
 * Returns what happened; 'needs-holder' (logged) means the address is the bootstrap one but the
 * proof does not show who holds the account.
 */
export async function maybeBootstrapOwner(
  trx: Trx,
  user: { id: string; email: string; emailVerified: boolean },
  bootstrapEmail: string | undefined,
  now: Date,
  proof: MailboxProof,
  log: FastifyBaseLogger,
): Promise<'promoted' | 'needs-holder' | 'no'> {
  if (!user.emailVerified || !isBootstrapEmail(user.email, bootstrapEmail)) return 'no'
  const role = await lockRoleOfVerifiedUser(trx, user.id)
  if (!role || role === 'owner') return 'no'
  if (proof !== 'holder' && (proof === 'link' || !(await onlyWayIn(trx, user.id, proof)))) {
    log.warn(NEEDS_HOLDER)
    return 'needs-holder'
  }
  // A promotion (never a demotion): changeRole ends no session, and audits it like every role change.
  await changeRole(trx, { userId: user.id, from: role, to: 'owner', actorId: null, ip: null, via: 'bootstrap_owner_email', now })
  return 'promoted'
}

/** Whether the provider login is the account's only way in: no password, no other provider login. */
async function onlyWayIn(trx: Trx, userId: string, login: { provider: string; subject: string }): Promise<boolean> {
  const ways = await waysIn(trx, userId)
  return ways.length === 1 && ways[0]!.providerId === login.provider && ways[0]!.accountId === login.subject
}

/**
 * At start-up: says what an existing account with the bootstrap email still needs. It is never
 * promoted here: nothing at start-up shows who holds its ways in.
 */
export async function reportBootstrapOwner(deps: { db: DB; log: FastifyBaseLogger }, email: string | undefined): Promise<void> {
  if (!email) return
  const user = await findUserByEmail(deps.db, email)
  if (user?.role === 'owner') return
  deps.log.info(
    { email },
    user
      ? NEEDS_HOLDER
      : 'BOOTSTRAP_OWNER_EMAIL: no account yet; sign up with this address and open the verification link in the same browser',
  )
}
