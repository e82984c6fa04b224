// Frozen once landed: a change is a new migration.
//
// Guests (better-auth's anonymous plugin): a user made by POST /api/auth/sign-in/anonymous, with no
// way in but its session, marked `is_anonymous`. Its data moves to the account its browser signs up
// or signs in to (src/auth/guests/), and a guest nobody can reach any more is purged by the
// maintenance task; the partial index serves that purge's scan of guests alone.
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('user')
    .addColumn('is_anonymous', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute()
  await db.schema
    .createIndex('user_guest_idx')
    .on('user')
    .column('created_at')
    .where(sql.ref('is_anonymous'), '=', true)
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('user_guest_idx').execute()
  await db.schema.alterTable('user').dropColumn('is_anonymous').execute()
}
