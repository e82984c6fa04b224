// Frozen once landed: a change is a new migration.
//
// phone_number: a number in E.164 ('+' and 8 to 15 digits, checked here too, so no other writer can
// store a spelling the sign-in would never find), unique: a number signs in to one account at most.
// phone_number_verified: the number was proven by a code sent to it (better-auth's phoneNumber
// plugin's two fields). Only a verified number signs in (src/auth/phone/).
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('user')
    .addColumn('phone_number', 'text', (c) => c.unique().check(sql`phone_number ~ '^\\+[1-9][0-9]{7,14}$'`))
    .addColumn('phone_number_verified', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('user').dropColumn('phone_number').dropColumn('phone_number_verified').execute()
}
