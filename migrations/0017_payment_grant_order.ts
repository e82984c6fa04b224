// Frozen once landed: a change is a new migration.
//
// The order in which payments were granted. A refund's judgement (src/payment/grants.ts) walks the
// user's plan grants in the order they stacked, and `granted_at` cannot give it: it is the time the
// grant's transaction began, before it waited for the user row's lock, so a grant that waited can
// carry an earlier time than the one it stacked on (and two grants can share a millisecond). The
// number is drawn by the database when a payment is marked granted, in the granting transaction,
// after the lock: whichever version of the app granted it, during a rollout too. Grants made before
// this migration have none and come first, in the order of `granted_at` as before.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create sequence payment_grant_seq as bigint`.execute(db)
  await db.schema.alterTable('payment').addColumn('grant_seq', 'bigint').execute()
  await sql`create function payment_grant_seq() returns trigger language plpgsql as $$
    begin
      new.grant_seq := nextval('payment_grant_seq');
      return new;
    end $$`.execute(db)
  await sql`create trigger payment_grant_seq before update of granted_at on payment for each row
    when (old.granted_at is null and new.granted_at is not null)
    execute function payment_grant_seq()`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger payment_grant_seq on payment`.execute(db)
  await sql`drop function payment_grant_seq()`.execute(db)
  await db.schema.alterTable('payment').dropColumn('grant_seq').execute()
  await sql`drop sequence payment_grant_seq`.execute(db)
}
