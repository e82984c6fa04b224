// Reading and locking one user's row.
import type { Executor, Trx } from '../../db/index.js'
import { fieldsOf, toUserWithFlags, type UserColumn, type UserFields, type UserRow, userColumns } from './rows.js'
import type { UserWithFlags } from './types.js'

/** A user by id, or by address (stored lower-case). */
export type UserKey = { id: string } | { email: string }

export async function findUserById(db: Executor, id: string): Promise<UserWithFlags | undefined> {
  const row = await db.selectFrom('user').select(userColumns).where('id', '=', id).executeTakeFirst()
  return row && toUserWithFlags(row)
}

export async function findUserByEmail(db: Executor, email: string): Promise<UserWithFlags | undefined> {
  const row = await db.selectFrom('user').select(userColumns).where('email', '=', email).executeTakeFirst()
  return row && toUserWithFlags(row)
}

/**
 * THE lock of a user's row, held until the transaction ends, and the columns `columns` read under
 * it. Every writer of an account takes it first, before the rows it writes (sessions, ways in,
 * links), so that acts on one account apply one after the other in one order: resetPassword's.
 * `share`: a sign-in inserting its session (auth/session/sessions.ts) only needs the row to stay as
 * read; the writers that end sessions wait for it, and it for them.
 */
export async function lockUser<C extends UserColumn>(
  trx: Trx,
  user: UserKey,
  columns: readonly C[],
  mode: 'update' | 'share' = 'update',
): Promise<UserFields<C> | undefined> {
  const query = trx.selectFrom('user').select(columns)
  const byKey = 'id' in user ? query.where('id', '=', user.id) : query.where('email', '=', user.email)
  const row = (await (mode === 'share' ? byKey.forShare() : byKey.forUpdate()).executeTakeFirst()) as Pick<UserRow, C> | undefined
  return row && fieldsOf(row, columns)
}
