// The cursor of every listing, as the client sees it: opaque, base64url of {"c": timestamp, "i": id}
// (pagination.ts says how it is made). Only zod here: the contract (src/contract/) reads `Limit` and
// `CursorParam`; the decoding runs on the server, where the input is validated.
import { z } from 'zod'

export interface Cursor {
  /** ISO-8601 UTC with 3 or 6 fraction digits, exactly as the row holds it. */
  at: string
  id: string
}

const BASE64URL = /^[A-Za-z0-9_-]+$/
const EXACT_ISO = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3})(\d{3})?Z$/
const CursorBody = z.strictObject({
  c: z.string().regex(EXACT_ISO),
  i: z
    .string()
    .min(1)
    .max(200)
    .regex(/^[\x21-\x7e]+$/),
})

// Web APIs (btoa, atob, TextEncoder), not Node's Buffer: the contract that reads this module also
// compiles and runs in the browser.
const utf8 = new TextEncoder()
const fromUtf8 = new TextDecoder('utf-8', { fatal: true })

function toBase64Url(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')
}

function fromBase64Url(raw: string): Uint8Array | null {
  try {
    return Uint8Array.from(atob(raw.replaceAll('-', '+').replaceAll('_', '/')), (c) => c.charCodeAt(0))
  } catch {
    return null
  }
}

export function encodeCursor(at: Date | string, id: string): string {
  const c = typeof at === 'string' ? at : at.toISOString()
  return toBase64Url(utf8.encode(JSON.stringify({ c, i: id })))
}

/** Only the exact encoding we produce is accepted: anything else is a forged or garbled cursor. */
function decodeCursor(raw: string): Cursor | null {
  if (!BASE64URL.test(raw)) return null
  const bytes = fromBase64Url(raw)
  if (!bytes || toBase64Url(bytes) !== raw) return null
  let parsed: unknown
  try {
    parsed = JSON.parse(fromUtf8.decode(bytes))
  } catch {
    return null
  }
  const body = CursorBody.safeParse(parsed)
  if (!body.success) return null
  // A calendar-invalid instant (Feb 30) would not survive the round trip through Date.
  const millis = EXACT_ISO.exec(body.data.c)![1]!
  const date = new Date(`${millis}Z`)
  if (Number.isNaN(date.getTime()) || date.toISOString() !== `${millis}Z`) return null
  // The JSON inside must be ours too: JSON.parse also takes other escapes, key orders and white space.
  return encodeCursor(body.data.c, body.data.i) === raw ? { at: body.data.c, id: body.data.i } : null
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
  .describe("Opaque cursor from the previous page's nextCursor")

export const Limit = z.coerce.number().int().min(1).max(100).default(20)
