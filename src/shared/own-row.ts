// How every query on a user's own records finds one: by its id AND its owner. Written once, so that
// no query on a user's journal entry, result, payment, passkey, linked account or session can forget
// the owner and answer for someone else's id. Named arguments: the two ids are both strings, and
// swapped they would match nothing. For single-table queries on a table with `id` and `user_id`.
import { type Expression, type SqlBool, sql } from 'kysely'

/** `("id" = $id and "user_id" = $userId)`: the row `id` when it belongs to `userId`, else none. */
export function ownRow(row: { id: string; userId: string }): Expression<SqlBool> {
  return sql<SqlBool>`(${sql.ref('id')} = ${row.id} and ${sql.ref('user_id')} = ${row.userId})`
}
