// Frozen once landed: a change is a new migration.
//
// credential_epoch: raised, under the user row's lock, by everything that ends a user's sessions
// (a reset, a change of password, a take-back, a ban, a role change, deletion). A sign-in reads it
// with the credential it checks and inserts its session only while it is unchanged, in the
// transaction that inserts (src/auth/session/sessions.ts): a sign-in in flight cannot outlive a reset.
//
// ways_in_unproven: the address was proven by a link opened without a session of the account (a
// mail scanner, or the mailbox's owner who never made this account). Its ways in (password,
// provider links, second factor) are then not known to be the mailbox holder's: the next proof
// that takes the account (a reset, a provider vouching for the address) takes it back, as for an
// address nobody had proven (src/auth/account/take-back.ts).
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('user')
    .addColumn('credential_epoch', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('ways_in_unproven', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('user').dropColumn('credential_epoch').dropColumn('ways_in_unproven').execute()
}
