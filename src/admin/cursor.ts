// Keyset pagination over (timestamp, id), newest first, with an opaque base64url cursor.
import { sql, type RawBuilder } from 'kysely'
import { AppError } from '../errors.js'

/**
 * The column as an ISO string with microseconds. A JS Date keeps only milliseconds: a cursor built
 * from one would skip rows that share the millisecond but not the microsecond.
 */
export const exactTime = (column: string): RawBuilder<string> =>
  sql<string>`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

export function encodeCursor(at: string, id: string): string {
  return Buffer.from(JSON.stringify([at, id])).toString('base64url')
}

const EXACT_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

export function decodeCursor(cursor: string): { at: string; id: string } {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    if (
      Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && EXACT_ISO.test(value[0]) &&
      typeof value[1] === 'string' && value[1].length > 0 && value[1].length <= 200
    ) {
      return { at: value[0], id: value[1] }
    }
  } catch {
    // fall through: any unreadable cursor is the same client error
  }
  throw new AppError(400, 'VALIDATION_ERROR', 'Invalid cursor', {
    data: { issues: [{ path: 'querystring.cursor', message: 'Invalid cursor' }] },
  })
}
