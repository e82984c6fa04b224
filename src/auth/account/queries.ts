// The self-service queries on a user's own rows: the ways in (`account`) and the change of address.
import type { Executor, Trx } from '../../../db/index.js'
import { sql } from 'kysely'
import { ownRow } from '../../shared/own-row.js'
import { readUser } from '../../user/queries.js'

export interface LinkedAccount {
  id: string
  providerId: string
  accountId: string
  userId: string
  /** False for a credential account whose password was never set (an imported one): no way in. */
  signsIn: boolean
  createdAt: Date
  updatedAt: Date
}

const accountColumns = ['id', 'provider_id', 'account_id', 'user_id', 'password_hash', 'created_at', 'updated_at'] as const

type AccountRow = {
  id: string
  provider_id: string
  account_id: string
  user_id: string
  password_hash: string | null
  created_at: Date
  updated_at: Date
}

// The hash itself never leaves this file: only whether there is one.
const toLinkedAccount = (r: AccountRow): LinkedAccount => ({
  id: r.id,
  providerId: r.provider_id,
  accountId: r.account_id,
  userId: r.user_id,
  signsIn: r.provider_id !== 'credential' || r.password_hash !== null,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
})

/** The user's ways in, oldest first. */
const accountsOfUserQuery = (db: Executor, userId: string) =>
  db.selectFrom('account').select(accountColumns).where('user_id', '=', userId).orderBy('created_at').orderBy('id')

export async function accountsOfUser(db: Executor, userId: string): Promise<LinkedAccount[]> {
  return (await accountsOfUserQuery(db, userId).execute()).map(toLinkedAccount)
}

/** The same, locked until the transaction ends: two unlinks at once cannot both remove "the other" way in. */
export async function lockAccountsOfUser(trx: Trx, userId: string): Promise<LinkedAccount[]> {
  return (await accountsOfUserQuery(trx, userId).forUpdate().execute()).map(toLinkedAccount)
}

export async function deleteAccountOfUser(trx: Trx, userId: string, id: string): Promise<void> {
  await trx.deleteFrom('account').where(ownRow({ id, userId })).execute()
}

/**
 * Moves the user from the address `from` to `to` and counts it verified (whoever opened the link
 * mailed to `to` owns it), or, undoing a change from an address never proven, as unverified as it
 * was; undefined when the user no longer has `from`.
 */
export async function replaceEmail(
  trx: Trx,
  userId: string,
  from: string,
  to: string,
  now: Date,
  { verified }: { verified: boolean } = { verified: true },
): Promise<{ id: string; email: string; name: string } | undefined> {
  return trx
    .updateTable('user')
    .set({
      email: to,
      email_verified: verified,
      former_emails: sql<string[]>`array_append(array_remove(former_emails, ${from}::text), ${from}::text)`,
      updated_at: now,
    })
    .where('id', '=', userId)
    .where('email', '=', from)
    .returning(['id', 'email', 'name'])
    .executeTakeFirst()
}

/** Whether any user has the address (the unique index has the final word; this spares a doomed link). */
export async function emailTaken(db: Executor, email: string): Promise<boolean> {
  return (await readUser(db, { email }, ['id'])) !== undefined
}
