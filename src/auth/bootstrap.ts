// BOOTSTRAP_OWNER_EMAIL: a fresh deployment gets its first owner without a shell. The account
// with that email becomes owner only once the email is verified: an unverified sign-up proves
// nothing, so anyone could otherwise claim the address before its owner does.
import type { FastifyInstance } from 'fastify'
import type { Transaction } from 'kysely'
import type { Database } from '../../db/schema.js'
import { changeRole } from '../admin/roles.js'

/**
 * Makes `user` the owner when its verified email is the bootstrap email. Call it in the
 * transaction that verifies an email (verify-email, or an identity-provider sign-in whose
 * provider vouches for the email). Returns true when the role changed.
 */
export async function maybeBootstrapOwner(
  trx: Transaction<Database>,
  user: { id: string; email: string; emailVerified: boolean },
  bootstrapEmail: string | undefined,
  now = new Date(),
): Promise<boolean> {
  if (!bootstrapEmail || !user.emailVerified || user.email.toLowerCase() !== bootstrapEmail.toLowerCase()) return false
  const current = await trx
    .selectFrom('user')
    .select('role')
    .where('id', '=', user.id)
    .where('email_verified', '=', true)
    .forUpdate()
    .executeTakeFirst()
  if (!current || current.role === 'owner') return false
  // A promotion (never a demotion): changeRole ends no session, and audits it like every role change.
  await changeRole(trx, { userId: user.id, from: current.role, to: 'owner', actorId: null, ip: null, via: 'bootstrap_owner_email', now })
  return true
}

/** At start-up: the existing, verified account with the bootstrap email becomes owner. */
export async function bootstrapOwnerAtStartup(app: FastifyInstance): Promise<void> {
  const email = app.config.auth.bootstrapOwnerEmail
  if (!email) return
  const promoted = await app.db.transaction().execute(async (trx) => {
    const user = await trx
      .selectFrom('user')
      .select(['id', 'email', 'email_verified'])
      .where('email', '=', email)
      .executeTakeFirst()
    if (!user) return 'absent' as const
    if (!user.email_verified) return 'unverified' as const
    return (await maybeBootstrapOwner(trx, { id: user.id, email: user.email, emailVerified: true }, email)) ? 'promoted' : 'already'
  })
  if (promoted === 'promoted') app.log.info({ email }, 'BOOTSTRAP_OWNER_EMAIL: account promoted to owner')
  else if (promoted !== 'already') {
    app.log.info({ email }, `BOOTSTRAP_OWNER_EMAIL: account ${promoted}; it becomes owner once it has signed up and verified its email`)
  }
}
