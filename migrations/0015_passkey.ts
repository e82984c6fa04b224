// Frozen once landed: a change is a new migration.
//
// Passkeys (WebAuthn credentials), in better-auth's passkey plugin's fields. Only the public key is
// kept: nothing here lets anyone sign in. `user_handle` is the WebAuthn user id the authenticator
// was given (one per user, random, never the user's id): a sign-in's assertion must carry it back.
// `counter` is the authenticator's signature counter (up to 2^32 - 1, hence bigint). The ceremonies'
// challenges are rows of `verification` (purged when they expire, like every emailed link).
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('passkey')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('name', 'text')
    // base64url, as the authenticator names the credential; a credential belongs to one account
    .addColumn('credential_id', 'text', (c) => c.notNull().unique())
    // base64 of the COSE public key, as better-auth stores it
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('user_handle', 'text', (c) => c.notNull())
    .addColumn('counter', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('device_type', 'text', (c) => c.notNull())
    .addColumn('backed_up', 'boolean', (c) => c.notNull())
    .addColumn('transports', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('aaguid', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .execute()
  await db.schema.createIndex('passkey_user_id_idx').on('passkey').column('user_id').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('passkey').execute()
}
