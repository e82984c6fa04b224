// Frozen once landed: a change is a new migration.
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  // Append-only GDPR consent log. user_id is set NULL when the account is deleted: the record of
  // what was consented to outlives the account, but no longer points at a person.
  await db.schema
    .createTable('consent_record')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.references('user.id').onDelete('set null'))
    .addColumn('type', 'text', (c) =>
      c.notNull().check(sql`type in ('terms', 'privacy', 'marketing', 'analytics', 'ai_processing')`),
    )
    .addColumn('version', 'text', (c) => c.notNull().check(sql`char_length(version) between 1 and 64`))
    .addColumn('granted', 'boolean', (c) => c.notNull())
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('consent_record_user_created_idx').on('consent_record').columns(['user_id', 'created_at']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('consent_record').execute()
}
