// Frozen once landed: a change is a new migration.
//
// The devices each account has signed in from, so a sign-in from one not seen before is mailed to
// the account's owner (src/auth/security/devices.ts). A device is a browser holding a long-lived
// signed cookie with a random id; the row keeps only SHA-256 of the account's id and that id, so a
// dump yields no cookie and does not show that two accounts share a browser.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('known_device')
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('device_hash', 'text', (c) => c.notNull())
    .addColumn('first_seen_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_seen_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('known_device_pkey', ['user_id', 'device_hash'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('known_device').execute()
}
