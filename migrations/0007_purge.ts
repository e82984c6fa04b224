// Frozen once landed: a change is a new migration.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  // The periodic purge (src/maintenance/purge.ts) finds expired tokens by expiry, in batches;
  // without the index each batch would scan and sort the whole table. `session` has its own already.
  await db.schema.createIndex('verification_expires_at_idx').on('verification').column('expires_at').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('verification_expires_at_idx').execute()
}
