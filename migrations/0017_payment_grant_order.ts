// Frozen once landed: a change is a new migration.
//
// The order in which payments were granted. A refund's judgement (src/payment/grants.ts) walks the
// user's plan grants in the order they stacked, and `granted_at` cannot give it: it is the time the
// grant's transaction began, before it waited for the user row's lock, so a grant that waited can
// carry an earlier time than the one it stacked on (and two grants can share a millisecond). The
// number is drawn while that lock is held. Grants made before this migration have none and come
// first, in the order of `granted_at` as before.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create sequence payment_grant_seq as bigint`.execute(db)
  await db.schema.alterTable('payment').addColumn('grant_seq', 'bigint').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('payment').dropColumn('grant_seq').execute()
  await sql`drop sequence payment_grant_seq`.execute(db)
}
