import { z } from 'zod'
import { CursorParam, Limit } from '../shared/pagination.js'

// Postgres text cannot hold NUL, and a lone surrogate cannot be stored as UTF-8 or in jsonb:
// refused here so they are a 400, never a database error.
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
export const isStorableText = (s: string): boolean => !UNSTORABLE.test(s)

export const PlainText = (min: number, max: number) =>
  z.string().trim().min(min).max(max).refine(isStorableText, { message: 'Contains characters that cannot be stored' })

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

export const todayUtc = (now: Date): string => now.toISOString().slice(0, 10)

// Printable ASCII only: a NUL or stray byte in an id would be a database error, not a 404.
export const IdParams = z.strictObject({ id: z.string().regex(/^[\x21-\x7e]{1,200}$/, { message: 'Not an id' }) })

const Mood = z.number().int().min(1).max(5)
const MoodLabel = PlainText(1, 50)
const Tags = z.array(PlainText(1, 32)).max(10)
const PromptId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { message: 'Expected a prompt id' })

export const CreateEntryBody = z.strictObject({
  content: PlainText(1, 20_000),
  mood: Mood.describe('1 (low) .. 5 (high)'),
  moodLabel: MoodLabel.nullish(),
  tags: Tags.optional(),
  entryDate: CalendarDate.optional().describe('Defaults to today (UTC)'),
  promptId: PromptId.nullish().describe('The daily prompt the entry answers'),
})

export const UpdateEntryBody = z
  .strictObject({
    content: PlainText(1, 20_000).optional(),
    mood: Mood.optional(),
    moodLabel: MoodLabel.nullable().optional(),
    tags: Tags.optional(),
    entryDate: CalendarDate.optional(),
    promptId: PromptId.nullable().optional(),
  })
  .refine((body) => Object.keys(body).length > 0, { message: 'Nothing to update' })

export const ListEntriesQuery = z
  .strictObject({
    limit: Limit,
    cursor: CursorParam.optional(),
    from: CalendarDate.optional().describe('Earliest entryDate, inclusive'),
    to: CalendarDate.optional().describe('Latest entryDate, inclusive'),
    mood: z.coerce.number().int().min(1).max(5).optional(),
  })
  .refine((q) => !q.from || !q.to || q.from <= q.to, { message: '`from` is after `to`', path: ['from'] })

export const EntrySchema = z
  .object({
    id: z.string(),
    userId: z.string(),
    content: z.string(),
    mood: z.number().int(),
    moodLabel: z.string().nullable(),
    tags: z.array(z.string()),
    entryDate: z.string(),
    promptId: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'JournalEntry' })

export const EntryPageSchema = z.object({ items: z.array(EntrySchema), nextCursor: z.string().nullable() })

export const TodayPromptQuery = z.strictObject({
  locale: z
    .string()
    .regex(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, { message: 'Expected a language tag such as id or en-US' })
    .max(35)
    .optional()
    .describe('id or en (regional tags such as id-ID are accepted); defaults to the profile locale, else en'),
  date: CalendarDate.optional().describe('The client\'s local date; defaults to today (UTC)'),
})

export const PromptSchema = z
  .object({ id: z.string(), date: z.string(), text: z.string(), locale: z.enum(['id', 'en']) })
  .meta({ id: 'JournalPrompt' })

export type CreateEntryInput = z.infer<typeof CreateEntryBody>
export type UpdateEntryInput = z.infer<typeof UpdateEntryBody>
export type ListEntriesInput = z.infer<typeof ListEntriesQuery>
export type EntryJson = z.infer<typeof EntrySchema>
