// The import format (docs/import.md), one zod schema per row. Rows are validated one by one so that a
// bad row is reported and the rest still import. Output values are normalised (emails lowercased,
// date-times as ISO UTC) so that the same source always yields the same digest.
import { z } from 'zod'
import { SYSTEMS } from '../compatibility/schemas.js'
import { CONSENT_TYPES } from '../consent/schemas.js'
import { PLANS } from '../shared/plans.js'

/** `schema`, with null and absent both becoming `fallback`. */
const orDefault = <S extends z.ZodType, D>(schema: S, fallback: D) =>
  schema.nullish().transform((v): z.output<S> | D => (v ?? fallback) as z.output<S> | D)

const id = z.string().min(1, 'must not be empty').max(255, 'longer than 255 characters')
const dateTime = z.iso
  .datetime({ offset: true, error: 'not an ISO-8601 date-time with a time zone' })
  .transform((v) => new Date(v).toISOString())
const calendarDate = z.iso.date({ error: 'not a valid YYYY-MM-DD date' })
const json = z.record(z.string(), z.unknown())

const importUserSchema = z.object({
  id,
  email: z.string().trim().toLowerCase().max(254, 'longer than 254 characters').pipe(z.email('invalid email')),
  name: orDefault(z.string().max(500), ''),
  role: orDefault(z.string(), 'member'),
  emailVerified: orDefault(z.boolean(), false),
  image: orDefault(z.string().max(2048), null),
  plan: orDefault(z.enum(PLANS, { error: `not one of ${PLANS.join(', ')}` }), 'free' as const),
  planExpiresAt: orDefault(dateTime, null),
  createdAt: orDefault(dateTime, null),
  updatedAt: orDefault(dateTime, null),
  password: orDefault(z.object({ algorithm: z.string().trim().toLowerCase(), hash: orDefault(z.string(), null) }), null),
})

const importAccountSchema = z.object({
  userId: id,
  providerId: z.string(),
  accountId: z.string().min(1, 'must not be empty').max(255, 'longer than 255 characters'),
})

const importJournalEntrySchema = z.object({
  id,
  userId: id,
  content: z.string().min(1, 'must not be empty'),
  mood: z.number().int('not an integer').min(1).max(5),
  moodLabel: orDefault(z.string().max(200), null),
  tags: orDefault(z.array(z.string().max(200)), [] as string[]),
  entryDate: orDefault(calendarDate, null),
  promptId: orDefault(z.string(), null),
  createdAt: orDefault(dateTime, null),
  updatedAt: orDefault(dateTime, null),
})

// Extra keys of a partner are kept: the previous system's data is not ours to drop.
const partner = z.looseObject({
  name: z.string().min(1, 'must not be empty'),
  birthDate: calendarDate,
  birthTime: z
    .string()
    .regex(/^([01][0-9]|2[0-3]):[0-5][0-9]$/, 'not HH:MM')
    .optional(),
  birthPlace: z
    .looseObject({ name: z.string(), latitude: z.number().min(-90).max(90), longitude: z.number().min(-180).max(180) })
    .optional(),
})

const importCompatibilityResultSchema = z.object({
  id,
  userId: id,
  partner,
  systems: z.array(z.enum(SYSTEMS, { error: `not one of ${SYSTEMS.join(', ')}` })).min(1, 'must not be empty'),
  score: z.number().int('not an integer').min(0).max(100),
  summary: orDefault(json, {} as Record<string, unknown>),
  deepInsights: orDefault(json, null),
  deepInsightsUnlocked: orDefault(z.boolean(), false),
  paymentId: orDefault(z.string().max(255), null),
  createdAt: orDefault(dateTime, null),
  updatedAt: orDefault(dateTime, null),
})

const importConsentSchema = z.object({
  id: orDefault(id, null),
  userId: id,
  type: z.enum(CONSENT_TYPES, { error: `not one of ${CONSENT_TYPES.join(', ')}` }),
  version: z.string().min(1, 'must not be empty').max(64, 'longer than 64 characters'),
  granted: z.boolean(),
  createdAt: orDefault(dateTime, null),
})

export type ImportUserInput = z.output<typeof importUserSchema>
export type ImportAccountInput = z.output<typeof importAccountSchema>
export type ImportJournalEntryInput = z.output<typeof importJournalEntrySchema>
export type ImportCompatibilityResultInput = z.output<typeof importCompatibilityResultSchema>
export type ImportConsentInput = z.output<typeof importConsentSchema>

/** The row each section but users holds once parsed (a consent has its id by then, given or derived). */
export interface SectionRows {
  accounts: ImportAccountInput
  journalEntries: ImportJournalEntryInput
  compatibilityResults: ImportCompatibilityResultInput
  consents: ImportConsentInput & { id: string }
}

/** The sections of an export, in the order they are imported (users before what points at them). */
export const SECTIONS = ['users', 'accounts', 'journalEntries', 'compatibilityResults', 'consents'] as const
export type SectionName = (typeof SECTIONS)[number]

export const rowSchemas = {
  users: importUserSchema,
  accounts: importAccountSchema,
  journalEntries: importJournalEntrySchema,
  compatibilityResults: importCompatibilityResultSchema,
  consents: importConsentSchema,
} as const

/** One line per zod issue: `path: message`. */
export function reasonOf(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? i.path.join('.') : 'row'}: ${i.message}`).join('; ')
}
