// BOOTSTRAP_OWNER_EMAIL: a fresh deployment gets its first owner without a shell. Proving the
// mailbox is not enough on its own: whoever registered the address first (a sign-up with a
// password, a provider sign-in, a change of address) holds a way into the account, and the real
// owner may open a mail of ours they never asked for (the sign-up's verification link, a change of
// address's confirmation). So the account becomes owner only when the proof comes through the
// account's only way in: a link opened in a browser signed in to an account with one way in (the
// session came through it), a provider sign-in through its only login, or a password reset, which
// takes the account back (resetPassword removes every other way in).
import type { FastifyBaseLogger } from 'fastify'
import type { DB, Trx } from '../../db/index.js'
import { endSessionsOfUser, findUserByEmail, lockRoleOfVerifiedUser, waysIn } from './queries.js'
import { changeRole } from './roles.js'
import { revokeTokens } from './verification.js'

/** A way in: the password (`credential`) or a provider login. */
interface Login {
  provider: string
  subject: string
}

/**
 * How the address was just proven:
 * - `'link'`: a mailed link opened without the account's session, perhaps by someone who never asked;
 * - `'reset'`: a password reset that left its new password as the only way in;
 * - `{ session }`: in a browser signed in to the account, with that session's id (a link opened
 *   there, or `linked`, a provider login it just added);
 * - `{ login }`: a provider sign-in.
 */
export type MailboxProof = 'link' | 'reset' | { session: string | null; linked?: Login } | { login: Login }

/** What an operator reads when the bootstrap address was proven but the account was not promoted. */
const NEEDS_HOLDER =
  'BOOTSTRAP_OWNER_EMAIL: the address is proven, but not through the account’s only way in; ' +
  'it becomes owner once its password is reset from that mailbox'

/** Whether `email` is the bootstrap owner's address. */
export const isBootstrapEmail = (email: string, bootstrapEmail: string | undefined): boolean =>
  bootstrapEmail !== undefined && email.toLowerCase() === bootstrapEmail.toLowerCase()

/**
 * Makes `user` the owner when its verified email is the bootstrap email and `proof` came through
 * the account's only way in (see above). Call it in the transaction that proves the address.
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
  if (proof !== 'reset' && (proof === 'link' || !(await throughOnlyWayIn(trx, user.id, proof)))) {
    log.warn(NEEDS_HOLDER)
    return 'needs-holder'
  }
  if (proof !== 'reset') {
    // What got in before through a way in that is gone now (a squatter may have given up its own
    // password to leave only the owner's): sessions, sign-ins waiting for a second factor, emailed
    // links. Only the proving session stays; resetPassword ends the rest itself.
    await endSessionsOfUser(trx, user.id, { except: ('session' in proof && proof.session) || undefined })
    await revokeTokens(trx, user.id)
  }
  // A promotion (never a demotion): changeRole ends no session, and audits it like every role change.
  await changeRole(trx, { userId: user.id, from: role, to: 'owner', actorId: null, ip: null, via: 'bootstrap_owner_email', now })
  return 'promoted'
}

const sameLogin = (way: { providerId: string; accountId: string }, login: Login) =>
  way.providerId === login.provider && way.accountId === login.subject

/**
 * Whether the proof came through the account's only way in: the provider login is the only one, or
 * the session's account has one way in (besides a login the session just linked), so the session
 * came through it.
 */
async function throughOnlyWayIn(trx: Trx, userId: string, proof: Exclude<MailboxProof, 'link' | 'reset'>): Promise<boolean> {
  const ways = await waysIn(trx, userId)
  if ('login' in proof) return ways.length === 1 && sameLogin(ways[0]!, proof.login)
  const { linked } = proof
  return ways.filter((way) => !linked || !sameLogin(way, linked)).length === 1
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
