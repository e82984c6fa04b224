// `select count(*)` over a query's table and conditions, as a number: node-postgres returns a
// bigint count as a string, PGlite as a number.
import type { SelectQueryBuilder } from 'kysely'
import type { Database } from '../../db/schema.js'

/** How many rows `query` (a selectFrom with its where clauses, nothing selected) finds. */
export async function countRows<TB extends keyof Database>(query: SelectQueryBuilder<Database, TB, object>): Promise<number> {
  const row = await query.select((eb) => eb.fn.countAll<string | number>().as('n')).executeTakeFirstOrThrow()
  return Number(row.n)
}
