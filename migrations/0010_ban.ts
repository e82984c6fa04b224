// Frozen once landed: a change is a new migration.
//
// Suspension (POST /api/v1/admin/users/{id}/ban): better-auth's admin plugin columns. A ban with
// `ban_expires` in the past no longer applies and is lifted at the next sign-in (src/auth/ban.ts).
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('user')
    .addColumn('banned', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('ban_reason', 'text')
    .addColumn('ban_expires', 'timestamptz')
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('user').dropColumn('banned').dropColumn('ban_reason').dropColumn('ban_expires').execute()
}
