// Frozen once landed: a change is a new migration.
import { sql, type Kysely } from 'kysely'

// created_at keeps millisecond precision: the pagination cursor carries it as a JS Date, and a
// microsecond remainder would make rows inside that millisecond fall between two pages.
const MS_TIMESTAMP = sql`timestamptz(3)`

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('journal_entry')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('mood', 'smallint', (c) => c.notNull().check(sql`mood between 1 and 5`))
    .addColumn('mood_label', 'text')
    .addColumn('tags', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`).check(sql`jsonb_typeof(tags) = 'array'`))
    .addColumn('entry_date', 'date', (c) => c.notNull())
    .addColumn('prompt_id', 'text')
    .addColumn('created_at', MS_TIMESTAMP, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema
    .createIndex('journal_entry_user_created_idx')
    .on('journal_entry')
    .columns(['user_id', 'created_at desc', 'id desc'])
    .execute()

  // payment_id is plain text, not a foreign key: imported results carry references to payments
  // of the previous system that do not exist here.
  await db.schema
    .createTable('compatibility_result')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('partner', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('systems', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`).check(sql`jsonb_typeof(systems) = 'array'`))
    .addColumn('score', 'smallint', (c) => c.notNull().check(sql`score between 0 and 100`))
    .addColumn('summary', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('deep_insights', 'jsonb')
    .addColumn('deep_insights_unlocked', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('payment_id', 'text')
    .addColumn('created_at', MS_TIMESTAMP, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema
    .createIndex('compatibility_result_user_created_idx')
    .on('compatibility_result')
    .columns(['user_id', 'created_at desc', 'id desc'])
    .execute()

  await db.schema
    .createTable('deep_insights_purchase')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('result_id', 'text', (c) => c.notNull().references('compatibility_result.id').onDelete('cascade'))
    .addColumn('payment_id', 'text', (c) => c.unique())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('active').check(sql`status in ('active', 'revoked')`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('revoked_at', 'timestamptz')
    .execute()
  // At most one live purchase per result: a second payment for the same result is a conflict.
  await db.schema
    .createIndex('deep_insights_purchase_active_result_key')
    .on('deep_insights_purchase')
    .column('result_id')
    .unique()
    .where(sql<boolean>`status = 'active'`)
    .execute()
  await db.schema.createIndex('deep_insights_purchase_result_idx').on('deep_insights_purchase').column('result_id').execute()
  await db.schema.createIndex('deep_insights_purchase_user_idx').on('deep_insights_purchase').column('user_id').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['deep_insights_purchase', 'compatibility_result', 'journal_entry']) {
    await db.schema.dropTable(table).execute()
  }
}
