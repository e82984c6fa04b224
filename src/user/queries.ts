// Reading and locking one user's row.
import type { ExpressionBuilder } from 'kysely'
import type { Executor, Trx } from '../../db/index.js'
import type { Database } from '../../db/schema.js'
import { fieldsOf, toUserWithFlags, type UserColumn, type UserFields, type UserRow, userColumns } from './rows.js'
import type { UserWithFlags } from './types.js'

/** A user by id, by address (stored lower-case), or by phone number (E.164). */
export type UserKey = { id: string } | { email: string } | { phoneNumber: string }

/** The row of `user`; a phone number finds its account only once verified: until then it is nobody's. */
const byKey = (user: UserKey) => (eb: ExpressionBuilder<Database, 'user'>) =>
  'id' in user
    ? eb('id', '=', user.id)
    : 'email' in user
      ? eb('email', '=', user.email)
      : eb.and([eb('phone_number', '=', user.phoneNumber), eb('phone_number_verified', '=', true)])

export async function findUserById(db: Executor, id: string): Promise<UserWithFlags | undefined> {
  const row = await db.selectFrom('user').select(userColumns).where('id', '=', id).executeTakeFirst()
  return row && toUserWithFlags(row)
}

export async function findUserByEmail(db: Executor, email: string): Promise<UserWithFlags | undefined> {
  const row = await db.selectFrom('user').select(userColumns).where('email', '=', email).executeTakeFirst()
  return row && toUserWithFlags(row)
}

/** The columns `columns` of a user's row, read without a lock; undefined when there is no such user. */
export async function readUser<C extends UserColumn>(
  db: Executor,
  user: UserKey,
  columns: readonly C[],
): Promise<UserFields<C> | undefined> {
  const row = (await db.selectFrom('user').select(columns).where(byKey(user)).executeTakeFirst()) as Pick<UserRow, C> | undefined
  return row && fieldsOf(row, columns)
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
  const query = trx.selectFrom('user').select(columns).where(byKey(user))
  const row = (await (mode === 'share' ? query.forShare() : query.forUpdate()).executeTakeFirst()) as Pick<UserRow, C> | undefined
  return row && fieldsOf(row, columns)
}
