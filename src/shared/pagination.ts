// Keyset pagination over (timestamp, id), newest first, for every listing (journal entries,
// compatibility results, payments, admin users and audit events). The cursor is opaque to
// clients: base64url of {"c": timestamp, "i": id}. The timestamp is the row's exact value: tables
// with timestamptz(3) give milliseconds (a JS Date keeps them all), tables with microsecond
// timestamps are read through exactTime(), since a Date would lose rows sharing a millisecond.
import { sql, type RawBuilder, type SelectQueryBuilder } from 'kysely'
import { type Cursor, encodeCursor } from './cursor.js'

export { type Cursor, CursorParam, Limit } from './cursor.js'

/** What a listing asks for: `limit` rows after `cursor` (the previous page's nextCursor). */
export interface PageRequest {
  limit: number
  cursor?: Cursor
}

export interface Page<T> {
  items: T[]
  nextCursor: string | null
}

/** The column as an ISO string with microseconds, for tables whose timestamps keep them. */
export const exactTime = (column: string): RawBuilder<string> =>
  sql<string>`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

/** The cursor's timestamp as a query value, compared in the database at full precision. */
const cursorTime = (cursor: Cursor): RawBuilder<Date> => sql<Date>`${cursor.at}::timestamptz`

/** The (created_at, id) key of rows whose created_at is timestamptz(3). */
export const byCreatedAt = (row: { created_at: Date; id: string }): { at: Date; id: string } => ({
  at: row.created_at,
  id: row.id,
})

/**
 * The one keyset query: rows strictly before the cursor, newest first by (`time`, id), `limit + 1`
 * of them (toPage turns the extra row into nextCursor). `time` is the table's timestamp column.
 */
export function newestFirst<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  page: PageRequest,
  time = 'created_at',
): SelectQueryBuilder<DB, TB, O> {
  const { cursor } = page
  const narrowed = cursor
    ? query.where(sql<boolean>`(${sql.ref(time)}, ${sql.ref('id')}) < (${cursorTime(cursor)}, ${cursor.id})`)
    : query
  return narrowed
    .orderBy(sql.ref(time), 'desc')
    .orderBy(sql.ref('id'), 'desc')
    .limit(page.limit + 1)
}

/** Turns `limit + 1` fetched rows into a page: the extra row only says that another page exists. */
export function toPage<R, T>(
  rows: R[],
  limit: number,
  shape: (row: R) => T,
  key: (row: R) => { at: Date | string; id: string },
): Page<T> {
  const more = rows.length > limit
  const kept = more ? rows.slice(0, limit) : rows
  const last = kept[kept.length - 1]
  if (!more || last === undefined) return { items: kept.map(shape), nextCursor: null }
  const { at, id } = key(last)
  return { items: kept.map(shape), nextCursor: encodeCursor(at, id) }
}
