// Frozen once landed: a change is a new migration.
//
// The plan expiry a payment's grant produced. A refund shortens the plan only while the user's plan
// still comes from that grant and the ones stacked on it since; after an upgrade, a lapse or an
// admin's change it is left alone, so a refund never takes the days of another purchase.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('payment').addColumn('granted_plan_expires_at', 'timestamptz').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('payment').dropColumn('granted_plan_expires_at').execute()
}
