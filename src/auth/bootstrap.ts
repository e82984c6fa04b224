// BOOTSTRAP_OWNER_EMAIL: a fresh deployment gets its first owner without a shell. The account
// with that email becomes owner only once the email is verified: an unverified sign-up proves
// nothing, so anyone could otherwise claim the address before its owner does.
import type { FastifyInstance } from 'fastify'
import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../../db/schema.js'
import { recordAudit } from '../admin/audit.js'

type Db = Kysely<Database> | Transaction<Database>

/**
 * Makes `user` the owner when its verified email is the bootstrap email. Call it in the
 * transaction that verifies an email (verify-email, or an identity-provider sign-in whose
 * provider vouches for the email). Returns true when the role changed.
 */
export async function maybeBootstrapOwner(
  trx: Db,
  user: { id: string; email: string; emailVerified: boolean },
  bootstrapEmail: string | undefined,
): Promise<boolean> {
  if (!bootstrapEmail || !user.emailVerified || user.email.toLowerCase() !== bootstrapEmail.toLowerCase()) return false
  const updated = await trx
    .updateTable('user')
    .set({ role: 'owner', updated_at: new Date() })
    .where('id', '=', user.id)
    .where('email_verified', '=', true)
    .where('role', '!=', 'owner')
    .returning('id')
    .executeTakeFirst()
  if (!updated) return false
  await recordAudit(trx, {
    actorId: null,
    action: 'admin.user.role_changed',
    targetType: 'user',
    targetId: user.id,
    details: { to: 'owner', via: 'bootstrap_owner_email' },
  })
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
