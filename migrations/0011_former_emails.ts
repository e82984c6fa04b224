// Frozen once landed: a change is a new migration.
//
// The addresses an account had before a change of email. Erasure scrubs every one of them from the
// audit log, as it does the current one: an admin's search or a failed sign-in recorded the address
// the person had then. They are the person's own data, so the export shows them; they go with the row.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('user')
    .addColumn('former_emails', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('user').dropColumn('former_emails').execute()
}
