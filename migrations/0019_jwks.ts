// Frozen once landed: a change is a new migration.
//
// The keys that sign the tokens other services verify (src/auth/tokens/), in better-auth's jwt
// plugin's table name. `public_key` is the public JWK, served at /api/auth/jwks; `private_key` is
// the private JWK sealed under a key derived from AUTH_SECRET (AES-256-GCM, the key id bound in),
// so a database dump alone cannot sign a token. A key signs until `expires_at`, and is served until
// its last token expired (a token lives 15 minutes at most); the maintenance task deletes it then.
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('jwks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('private_key', 'text', (c) => c.notNull())
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('expires_at', sql`timestamptz(3)`, (c) => c.notNull())
    .execute()
  await db.schema.createIndex('jwks_expires_at_idx').on('jwks').column('expires_at').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('jwks').execute()
}
