// Frozen once landed: a change is a new migration.
//
// Two-factor authentication (TOTP, backup codes). The secret is stored encrypted (AES-256-GCM under a
// key derived from AUTH_SECRET), backup codes only as keyed hashes. Sign-in challenges and trusted
// devices are rows of `verification` (purged when they expire, like every emailed link).
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  // Read by the session lookup (the user JSON carries it); updates of "user" already notify the cache.
  await db.schema
    .alterTable('user')
    .addColumn('two_factor_enabled', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute()
  // Whether the session was started after a second factor (REQUIRE_ADMIN_TWO_FACTOR reads it).
  await db.schema
    .alterTable('session')
    .addColumn('two_factor_verified', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute()

  await db.schema
    .createTable('two_factor')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('user.id').onDelete('cascade'))
    .addColumn('secret', 'text', (c) => c.notNull()) // encrypted, never the plain secret
    // false until the first valid code confirms the authenticator app holds the secret
    .addColumn('verified', 'boolean', (c) => c.notNull().defaultTo(false))
    // the last TOTP time step accepted: a step at or before it is refused (a code works once)
    .addColumn('last_step', 'bigint')
    // wrong codes in a row on the signed-in confirm step; 5 and the secret must be set up anew
    .addColumn('failed_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    // wrong codes in a row at sign-in, across challenges; 10 and sign-in is locked until locked_until
    .addColumn('sign_in_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('locked_until', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()

  // One row per unused backup code; using one deletes its row (the delete is the claim).
  await db.schema
    .createTable('two_factor_backup_code')
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('code_hash', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('two_factor_backup_code_pkey', ['user_id', 'code_hash'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('two_factor_backup_code').execute()
  await db.schema.dropTable('two_factor').execute()
  await db.schema.alterTable('session').dropColumn('two_factor_verified').execute()
  await db.schema.alterTable('user').dropColumn('two_factor_enabled').execute()
}
