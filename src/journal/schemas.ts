import { z } from 'zod'
import { CursorParam, Limit } from '../shared/cursor.js'
import { CalendarDate, Id, PlainText } from '../shared/validation.js'

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

export const UpdateEntryInput = z
  .strictObject({
    id: Id,
    content: PlainText(1, 20_000).optional(),
    mood: Mood.optional(),
    moodLabel: MoodLabel.nullable().optional(),
    tags: Tags.optional(),
    entryDate: CalendarDate.optional(),
    promptId: PromptId.nullable().optional(),
  })
  .refine((input) => Object.keys(input).some((key) => key !== 'id'), { message: 'Nothing to update' })

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
    createdAt: z.date(),
    updatedAt: z.date(),
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
  date: CalendarDate.optional().describe("The client's local date; defaults to today (UTC)"),
})

export const PromptSchema = z
  .object({ id: z.string(), date: z.string(), text: z.string(), locale: z.enum(['id', 'en']) })
  .meta({ id: 'JournalPrompt' })

export type CreateEntryInput = z.infer<typeof CreateEntryBody>
export type EntryChanges = Omit<z.infer<typeof UpdateEntryInput>, 'id'>
export type ListEntriesInput = z.infer<typeof ListEntriesQuery>
export type TodayPromptInput = z.infer<typeof TodayPromptQuery>
