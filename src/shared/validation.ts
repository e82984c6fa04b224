// Input rules shared by every domain, in the one error shape of a failed schema.
import { z } from 'zod'
import { InputError } from './errors.js'

/** A 400 for a rule a schema cannot express (it depends on the clock or the database); `path` is inside the input. */
export const invalidInput = (path: readonly PropertyKey[], message: string) => new InputError([{ path, message }])

/** An opaque id in a path: printable ASCII, as generated or as imported from the previous system. */
export const Id = z.string().regex(/^[\x21-\x7e]{1,200}$/, { message: 'Not an id' })

/** `/:id` path parameters. */
export const IdParams = z.strictObject({ id: Id })

// Postgres text cannot hold NUL, and a lone surrogate cannot be stored as UTF-8 or in jsonb:
// refused here so they are a 400, never a database error.
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
export const isStorableText = (s: string): boolean => !UNSTORABLE.test(s)

/** Text a user writes, trimmed, `min`..`max` characters, storable. */
export const PlainText = (min: number, max: number) =>
  z.string().trim().min(min).max(max).refine(isStorableText, { message: 'Contains characters that cannot be stored' })

// Control characters (tab and line breaks included, C1 too) and the line and paragraph separators
// have no place in a name or a place. Nor have format characters (Unicode Cf): the bidirectional
// embeddings, overrides, isolates and marks reorder what a reader sees ("Eve\u202Egnp.exe" shows as
// "Eveexe.png"), the others hide text. Kept: ZERO WIDTH NON-JOINER and JOINER, which Persian and
// Indic names and emoji sequences need to be spelt right, and which neither reorder nor hide text.
const CONTROL = /[\p{Cc}\p{Zl}\p{Zp}]/u
const FORMAT = /(?![\u200C\u200D])\p{Cf}/u

/** One line a user writes (a name, a place): PlainText without control, format or bidirectional characters. */
export const SingleLine = (min: number, max: number) =>
  PlainText(min, max)
    .refine((v) => !CONTROL.test(v), { message: 'Must not contain control characters' })
    .refine((v) => !FORMAT.test(v), { message: 'Must not contain format or bidirectional control characters' })

function isRealDate(s: string): boolean {
  const [y, m, d] = s.split('-').map(Number) as [number, number, number]
  const date = new Date(Date.UTC(y, m - 1, d))
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d
}

/** A calendar date `YYYY-MM-DD` that exists (no 2023-02-29), years 1900..2999. */
export const CalendarDate = z
  .string()
  .regex(/^(19|2\d)\d{2}-\d{2}-\d{2}$/, { message: 'Expected a date YYYY-MM-DD' })
  .refine(isRealDate, { message: 'Not a real calendar date' })
