// Frozen once landed: a change is a new migration.
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  // What the import last wrote for each source row, so a second run can tell unchanged rows (skip),
  // corrected rows (update) and rows changed or deleted in the app since (leave alone).
  // Digests only: no profile data and never a password-derived value that is not salted.
  await db.schema
    .createTable('import_record')
    .addColumn('section', 'text', (c) => c.notNull()) // 'user', 'account', 'journal_entry', 'compatibility_result', 'consent'
    .addColumn('source_key', 'text', (c) => c.notNull())
    .addColumn('source_digest', 'text') // SHA-256 of the normalised source row
    .addColumn('written_digest', 'text') // users: SHA-256 of the stored (salted) password hash last written
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('import_record_pkey', ['section', 'source_key'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('import_record').execute()
}
