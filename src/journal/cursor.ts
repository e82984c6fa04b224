// Keyset pagination over (created_at, id), newest first, shared by journal entries and
// compatibility results. The cursor is opaque to clients: base64url of {"c": createdAt, "i": id}.
import { z } from 'zod'

export interface Cursor {
  createdAt: Date
  id: string
}

export interface Page<T> {
  items: T[]
  nextCursor: string | null
}

const BASE64URL = /^[A-Za-z0-9_-]+$/
const CursorBody = z.strictObject({
  c: z.iso.datetime({ precision: 3 }),
  i: z.string().min(1).max(200).regex(/^[\x21-\x7e]+$/),
})

export function encodeCursor(row: { created_at: Date; id: string }): string {
  return Buffer.from(JSON.stringify({ c: row.created_at.toISOString(), i: row.id })).toString('base64url')
}

/** Only the exact encoding we produce is accepted: anything else is a forged or garbled cursor. */
export function decodeCursor(raw: string): Cursor | null {
  if (!BASE64URL.test(raw)) return null
  const buffer = Buffer.from(raw, 'base64url')
  if (buffer.toString('base64url') !== raw) return null
  let parsed: unknown
  try {
    parsed = JSON.parse(buffer.toString('utf8'))
  } catch {
    return null
  }
  const body = CursorBody.safeParse(parsed)
  if (!body.success) return null
  const createdAt = new Date(body.data.c)
  if (Number.isNaN(createdAt.getTime()) || createdAt.toISOString() !== body.data.c) return null
  return { createdAt, id: body.data.i }
}

/** The `cursor` query parameter: a bad one is a 400 VALIDATION_ERROR like any other bad input. */
export const CursorParam = z
  .string()
  .max(512)
  .transform((raw, ctx) => {
    const cursor = decodeCursor(raw)
    if (!cursor) {
      ctx.addIssue({ code: 'custom', message: 'Invalid cursor' })
      return z.NEVER
    }
    return cursor
  })
  .describe('Opaque cursor from the previous page\'s nextCursor')

export const Limit = z.coerce.number().int().min(1).max(100).default(20)

/** Turns `limit + 1` fetched rows into a page: the extra row only says that another page exists. */
export function toPage<R extends { created_at: Date; id: string }, T>(rows: R[], limit: number, shape: (row: R) => T): Page<T> {
  const more = rows.length > limit
  const kept = more ? rows.slice(0, limit) : rows
  const last = kept[kept.length - 1]
  return { items: kept.map(shape), nextCursor: more && last ? encodeCursor(last) : null }
}
