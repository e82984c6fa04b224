// BOOTSTRAP_OWNER_EMAIL: a fresh deployment gets its first owner without a shell. The account
// with that email becomes owner only once the email is verified: an unverified sign-up proves
// nothing, so anyone could otherwise claim the address before its owner does.
import type { FastifyBaseLogger } from 'fastify'
import type { DB, Trx } from '../../db/index.js'
import type { Clock } from '../shared/clock.js'
import { findUserByEmail, lockRoleOfVerifiedUser } from './queries.js'
import { changeRole } from './roles.js'

/**
 * Makes `user` the owner when its verified email is the bootstrap email. Call it in the
 * transaction that verifies an email (verify-email, or an identity-provider sign-in whose
 * provider vouches for the email). Returns true when the role changed.
 */
export async function maybeBootstrapOwner(
  trx: Trx,
  user: { id: string; email: string; emailVerified: boolean },
  bootstrapEmail: string | undefined,
  now: Date,
): Promise<boolean> {
  if (!bootstrapEmail || !user.emailVerified || user.email.toLowerCase() !== bootstrapEmail.toLowerCase()) return false
  const role = await lockRoleOfVerifiedUser(trx, user.id)
  if (!role || role === 'owner') return false
  // A promotion (never a demotion): changeRole ends no session, and audits it like every role change.
  await changeRole(trx, { userId: user.id, from: role, to: 'owner', actorId: null, ip: null, via: 'bootstrap_owner_email', now })
  return true
}

/** At start-up: the existing, verified account with the bootstrap email becomes owner. */
export async function bootstrapOwnerAtStartup(
  deps: { db: DB; clock: Clock; log: FastifyBaseLogger },
  email: string | undefined,
): Promise<void> {
  if (!email) return
  const outcome = await deps.db.transaction().execute(async (trx) => {
    const user = await findUserByEmail(trx, email)
    if (!user) return 'absent' as const
    if (!user.emailVerified) return 'unverified' as const
    return (await maybeBootstrapOwner(trx, user, email, deps.clock.now())) ? 'promoted' : 'already'
  })
  if (outcome === 'promoted') deps.log.info({ email }, 'BOOTSTRAP_OWNER_EMAIL: account promoted to owner')
  else if (outcome !== 'already') {
    deps.log.info(
      { email },
      `BOOTSTRAP_OWNER_EMAIL: account ${outcome}; it becomes owner once it has signed up and verified its email`,
    )
  }
}
