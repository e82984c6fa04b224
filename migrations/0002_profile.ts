// Frozen once landed: a change is a new migration.
// The profile columns on `user`: the birth data the browser's analyses run on, plus locale and zone.
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('user')
    .addColumn('birth_date', 'date', (c) => c.check(sql`birth_date >= date '1900-01-01'`))
    .addColumn('birth_time', 'text', (c) => c.check(sql`birth_time ~ '^([01][0-9]|2[0-3]):[0-5][0-9]$'`))
    .addColumn('birth_place', 'jsonb', (c) => c.check(sql`jsonb_typeof(birth_place) = 'object'`))
    .addColumn('gender', 'text', (c) => c.check(sql`gender in ('male', 'female', 'other')`))
    .addColumn('locale', 'text', (c) => c.check(sql`char_length(locale) <= 35`))
    .addColumn('timezone', 'text', (c) => c.check(sql`char_length(timezone) <= 64`))
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('user')
    .dropColumn('timezone')
    .dropColumn('locale')
    .dropColumn('gender')
    .dropColumn('birth_place')
    .dropColumn('birth_time')
    .dropColumn('birth_date')
    .execute()
}
