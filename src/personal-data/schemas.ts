import { z } from 'zod'
import { CurrentPassword } from '../auth/schemas.js'
import { SECTION_KEYS, type Row, type SectionKey } from './queries.js'
import type { PersonalData } from './service.js'

const Rows = z.array(z.record(z.string(), z.unknown()))

export const PersonalDataSchema = z
  .object({
    exportedAt: z.string(),
    profile: z.record(z.string(), z.unknown()),
    ...(Object.fromEntries(SECTION_KEYS.map((key) => [key, Rows])) as Record<SectionKey, typeof Rows>),
  })
  .describe('Sessions carry public ids only; no token, hash or secret appears anywhere')
  .meta({ id: 'PersonalData' })

export const DeleteAccountBody = z.strictObject({ password: CurrentPassword.optional() }).nullish()

/** A row as JSON: its dates as ISO-8601 (values inside JSON columns are JSON already). */
const toRowJson = (row: Row): Row =>
  Object.fromEntries(Object.entries(row).map(([key, value]) => [key, value instanceof Date ? value.toISOString() : value]))

export function toPersonalDataJson(data: PersonalData): z.infer<typeof PersonalDataSchema> {
  const { exportedAt, profile, ...sections } = data
  return {
    exportedAt: exportedAt.toISOString(),
    profile: toRowJson(profile),
    ...(Object.fromEntries(Object.entries(sections).map(([key, rows]) => [key, rows.map(toRowJson)])) as Record<
      SectionKey,
      Row[]
    >),
  }
}
