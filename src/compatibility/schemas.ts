import { z } from 'zod'
import { CursorParam, Limit } from '../shared/cursor.js'
import { CalendarDate, Id, isStorableText, PlainText } from '../shared/validation.js'

export const SYSTEMS = ['astrology', 'numerology', 'bazi', 'primbon', 'human_design'] as const
export type System = (typeof SYSTEMS)[number]

const SUMMARY_MAX_BYTES = 32 * 1024
const DEEP_INSIGHTS_MAX_BYTES = 128 * 1024
const JSON_MAX_DEPTH = 32

const utf8 = new TextEncoder()

/** Why a client-made JSON document cannot be stored as is, or null when it can. */
function jsonProblem(root: unknown, maxBytes: number): string | null {
  // Iterative: a hostile document nested thousands deep must not exhaust the stack here or in Postgres.
  const stack: Array<[unknown, number]> = [[root, 0]]
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!
    if (typeof value === 'string') {
      if (!isStorableText(value)) return 'Contains characters that cannot be stored'
    } else if (value !== null && typeof value === 'object') {
      if (depth >= JSON_MAX_DEPTH) return `Nested deeper than ${JSON_MAX_DEPTH} levels`
      for (const [key, child] of Object.entries(value)) {
        if (!isStorableText(key)) return 'Contains characters that cannot be stored'
        stack.push([child, depth + 1])
      }
    }
  }
  if (utf8.encode(JSON.stringify(root)).length > maxBytes) return `Larger than ${maxBytes} bytes as JSON`
  return null
}

/** A JSON object the client produced (lite result, deep insights), bounded in size and depth. */
const JsonObject = (maxBytes: number) =>
  z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
    const problem = jsonProblem(value, maxBytes)
    if (problem) ctx.addIssue({ code: 'custom', message: problem })
  })

const BirthPlace = z.strictObject({
  name: PlainText(1, 200),
  latitude: z.number().min(-90).max(90),
  longitude: z.number().min(-180).max(180),
})

const PartnerInput = z.strictObject({
  name: PlainText(1, 100),
  birthDate: CalendarDate.describe('Not in the future'),
  birthTime: z
    .string()
    .regex(/^([01]\d|2[0-3]):[0-5]\d$/, { message: 'Expected HH:MM' })
    .optional(),
  birthPlace: BirthPlace.optional(),
})

const Systems = z
  .array(z.enum(SYSTEMS))
  .min(1)
  .max(SYSTEMS.length)
  .refine((list) => new Set(list).size === list.length, { message: 'Each system at most once' })

export const CreateResultBody = z.strictObject({
  partner: PartnerInput,
  systems: Systems,
  score: z.number().int().min(0).max(100),
  summary: JsonObject(SUMMARY_MAX_BYTES).describe(`The free lite result, at most ${SUMMARY_MAX_BYTES} bytes as JSON`),
})

export const UnlockInput = z.strictObject({
  id: Id,
  paymentId: z.string().min(1).max(200).optional().describe('Informational: the purchase on record decides'),
})

export const SaveDeepInsightsInput = z.strictObject({
  id: Id,
  content: JsonObject(DEEP_INSIGHTS_MAX_BYTES).describe(`At most ${DEEP_INSIGHTS_MAX_BYTES} bytes as JSON`),
})

export const ListResultsQuery = z.strictObject({ limit: Limit, cursor: CursorParam.optional() })

const PartnerSchema = z.object({
  name: z.string(),
  birthDate: z.string(),
  birthTime: z.string().optional(),
  birthPlace: z.object({ name: z.string(), latitude: z.number(), longitude: z.number() }).optional(),
})

const resultFields = {
  id: z.string(),
  userId: z.string(),
  partner: PartnerSchema,
  systems: z.array(z.string()),
  score: z.number().int(),
  summary: z.record(z.string(), z.unknown()),
  deepInsightsUnlocked: z.boolean(),
  paymentId: z.string().nullable(),
  createdAt: z.date(),
  updatedAt: z.date(),
}

export const ResultSchema = z
  .object({
    ...resultFields,
    deepInsights: z.record(z.string(), z.unknown()).nullable().describe('null unless unlocked'),
  })
  .meta({ id: 'CompatibilityResult' })

/** List items never carry deep insights: fetch one result to read them. */
const ResultListItemSchema = z.object(resultFields).meta({ id: 'CompatibilityResultListItem' })

export const ResultPageSchema = z.object({ items: z.array(ResultListItemSchema), nextCursor: z.string().nullable() })

export type CreateResultInput = z.infer<typeof CreateResultBody>
export type ListResultsInput = z.infer<typeof ListResultsQuery>
