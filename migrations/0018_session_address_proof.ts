// Frozen once landed: a change is a new migration.
//
// email_proven_at: when this session itself proved the account's address (a code typed in it, the
// emailed link opened in it, or a sign-in by an emailed code or link in its browser). Setting up a
// second factor needs a recent one (src/auth/account/second-factor.ts): a proof recorded on the
// user would let any session of the account, a stolen one included, add a second factor that then
// outlives the owner's recovery through the mailbox. Sessions born before this have none.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('session').addColumn('email_proven_at', 'timestamptz').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('session').dropColumn('email_proven_at').execute()
}
