// Frozen once landed: a change is a new migration.
//
// The order in which a user's consent decisions were recorded. `created_at` cannot tell two decisions
// of the same millisecond apart (the embedded database's clock counts milliseconds), and the latest
// decision per type is the one in force: a withdrawal right after a grant must not lose to it. Rows
// that exist already are numbered in the order they are stored.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('consent_record')
    .addColumn('seq', 'bigint', (c) => c.generatedAlwaysAsIdentity())
    .execute()
  await db.schema.dropIndex('consent_record_user_created_idx').execute()
  await db.schema
    .createIndex('consent_record_user_created_idx')
    .on('consent_record')
    .columns(['user_id', 'created_at', 'seq'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('consent_record_user_created_idx').execute()
  await db.schema.createIndex('consent_record_user_created_idx').on('consent_record').columns(['user_id', 'created_at']).execute()
  await db.schema.alterTable('consent_record').dropColumn('seq').execute()
}
