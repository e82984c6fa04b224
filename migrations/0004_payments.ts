// Frozen once landed: a change is a new migration.
import { sql, type Kysely } from 'kysely'

const MS_TIMESTAMP = sql`timestamptz(3)`

export async function up(db: Kysely<any>): Promise<void> {
  // user_id is set null when the account is deleted: the money moved, the record stays (anonymised).
  await db.schema
    .createTable('payment')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.references('user.id').onDelete('set null'))
    .addColumn('product', 'text', (c) => c.notNull())
    .addColumn('amount', 'integer', (c) => c.notNull().check(sql`amount > 0`))
    .addColumn('currency', 'text', (c) => c.notNull().defaultTo('IDR').check(sql`currency = 'IDR'`))
    .addColumn('status', 'text', (c) =>
      c.notNull().defaultTo('pending').check(sql`status in ('pending', 'paid', 'failed', 'expired', 'refunded')`),
    )
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('provider_ref', 'text')
    .addColumn('result_id', 'text')
    .addColumn('return_url', 'text', (c) => c.notNull())
    .addColumn('granted_at', 'timestamptz')
    .addColumn('created_at', MS_TIMESTAMP, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('payment_user_created_idx')
    .on('payment')
    .columns(['user_id', 'created_at desc', 'id desc'])
    .execute()
  await db.schema.createIndex('payment_provider_ref_idx').on('payment').columns(['provider', 'provider_ref']).execute()

  await db.schema
    .createTable('webhook_event')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('event_key', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('payment_id', 'text', (c) => c.references('payment.id').onDelete('set null'))
    .addColumn('received_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('webhook_event_provider_key', ['provider', 'event_key'])
    .execute()
  await db.schema.createIndex('webhook_event_payment_idx').on('webhook_event').column('payment_id').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('webhook_event').execute()
  await db.schema.dropTable('payment').execute()
}
