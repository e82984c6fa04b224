// Frozen once landed: a change is a new migration.
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('user')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('email_verified', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('image', 'text')
    .addColumn('role', 'text', (c) => c.notNull().defaultTo('member').check(sql`role in ('member', 'admin', 'owner')`))
    .addColumn('plan', 'text', (c) => c.notNull().defaultTo('free').check(sql`plan in ('free', 'premium', 'premium_plus')`))
    .addColumn('plan_expires_at', 'timestamptz')
    .addColumn('password_reset_required', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('user_email_lowercase', sql`email = lower(email)`)
    .execute()
  await db.schema.createIndex('user_email_key').on('user').column('email').unique().execute()
  await db.schema.createIndex('user_created_at_idx').on('user').columns(['created_at', 'id']).execute()

  await db.schema
    .createTable('session')
    .addColumn('id', 'text', (c) => c.primaryKey()) // public id, never the token
    .addColumn('token_hash', 'text', (c) => c.notNull().unique()) // SHA-256 of the token, hex
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('remember_me', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('ip_address', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('session_user_id_idx').on('session').column('user_id').execute()
  await db.schema.createIndex('session_expires_at_idx').on('session').column('expires_at').execute()

  await db.schema
    .createTable('account')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('provider_id', 'text', (c) => c.notNull()) // 'credential' or 'idp'
    .addColumn('account_id', 'text', (c) => c.notNull()) // user id for credentials, subject for the provider
    .addColumn('password_hash', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('account_provider_account_key', ['provider_id', 'account_id'])
    .execute()
  await db.schema.createIndex('account_user_id_idx').on('account').column('user_id').execute()

  await db.schema
    .createTable('verification')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('purpose', 'text', (c) => c.notNull()) // 'reset-password', 'verify-email', ...
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('user_id', 'text', (c) => c.references('user.id').onDelete('cascade'))
    .addColumn('data', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('verification_user_id_idx').on('verification').column('user_id').execute()

  // actor/target ids are plain text, not foreign keys: the log outlives the accounts it mentions.
  await db.schema
    .createTable('audit_event')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('actor_id', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target_type', 'text')
    .addColumn('target_id', 'text')
    .addColumn('ip', 'text')
    .addColumn('details', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .execute()
  await db.schema.createIndex('audit_event_at_idx').on('audit_event').columns(['at', 'id']).execute()
  await db.schema.createIndex('audit_event_actor_idx').on('audit_event').columns(['actor_id', 'at']).execute()
  await db.schema.createIndex('audit_event_target_idx').on('audit_event').columns(['target_id', 'at']).execute()

  await db.schema
    .createTable('usage_counter')
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('metric', 'text', (c) => c.notNull())
    .addColumn('period_start', 'timestamptz', (c) => c.notNull())
    .addColumn('used', 'integer', (c) => c.notNull().check(sql`used >= 0`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('usage_counter_pkey', ['user_id', 'metric', 'period_start'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['usage_counter', 'audit_event', 'verification', 'account', 'session', 'user']) {
    await db.schema.dropTable(table).execute()
  }
}
