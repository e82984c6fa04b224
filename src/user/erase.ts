// THE deletion of an account: in the user's home because two domains delete one (DELETE /api/v1/me
// in personal-data, better-auth's delete-user in auth) and neither may import the other.
import { sql } from 'kysely'
import type { Trx } from '../../db/index.js'
import { recordAudit } from '../shared/audit.js'
import { forbidden } from '../shared/errors.js'
import type { SessionUser } from './types.js'

/** The service must always keep an operator: an owner is removed from the command line. */
export function assertDeletable(user: Pick<SessionUser, 'role'>): void {
  if (user.role === 'owner') throw forbidden('An owner account cannot be deleted through the API')
}

/**
 * THE deletion of an account, in the caller's transaction (DELETE /api/v1/me and better-auth's
 * delete-user share it). The cascade removes sessions, accounts, verifications, journal, results
 * and usage; payments and consents stay with user_id set NULL (anonymised); the audit event of the
 * deletion keeps only the id.
 */
export async function eraseAccount(trx: Trx, user: Pick<SessionUser, 'id' | 'email'>): Promise<void> {
  await anonymiseKeptRecords(trx, user)
  await deleteUser(trx, user.id)
  // No ip, no email: the event must not put back the personal data the deletion removed.
  await recordAudit(trx, { actorId: user.id, action: 'account.deleted', targetType: 'user', targetId: user.id })
}

/**
 * What outlives the account loses what points to the person. Consents stay as the record of what
 * was agreed to, no longer tied to a person or a device. Payments stay for the books; explicit
 * rather than left to ON DELETE SET NULL, so erasure never depends on how a foreign key was
 * declared. The audit log keeps ids (accountability) but not the email addresses, the current one
 * and every one the account had before, wherever they appear (a failed sign-in, an admin's
 * search): every JSON string equal to one becomes "[deleted]".
 */
async function anonymiseKeptRecords(trx: Trx, user: { id: string; email: string }): Promise<void> {
  await trx
    .updateTable('consent_record')
    .set({ user_id: null, ip: null, user_agent: null })
    .where('user_id', '=', user.id)
    .execute()
  await trx.updateTable('payment').set({ user_id: null }).where('user_id', '=', user.id).execute()
  const row = await trx.selectFrom('user').select('former_emails').where('id', '=', user.id).executeTakeFirst()
  for (const email of new Set([user.email, ...(row?.former_emails ?? [])])) {
    const quoted = JSON.stringify(email)
    await sql`
      update audit_event set details = replace(details::text, ${quoted}, '"[deleted]"')::jsonb
      where strpos(details::text, ${quoted}) > 0`.execute(trx)
  }
}

/** The cascade removes sessions, accounts, verifications, journal, results and usage. */
async function deleteUser(trx: Trx, userId: string): Promise<void> {
  await trx.deleteFrom('user').where('id', '=', userId).execute()
}
