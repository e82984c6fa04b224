import { z } from 'zod'
import { CurrentPassword } from '../auth/core/schemas.js'

/** The export's sections: every kind of record held about a user (queries.ts finds each one's rows). */
export const SECTION_KEYS = [
  'sessions',
  'accounts',
  'verifications',
  'journalEntries',
  'compatibilityResults',
  'deepInsightsPurchases',
  'payments',
  'usageCounters',
  'consents',
  'auditEvents',
  'twoFactor',
  'twoFactorBackupCodes',
  'knownDevices',
  'passkeys',
] as const
export type SectionKey = (typeof SECTION_KEYS)[number]

/** A record as stored: camelCase keys, timestamps as dates (ISO-8601 in JSON). */
const Rows = z.array(z.record(z.string(), z.unknown()))

export const PersonalDataSchema = z
  .object({
    exportedAt: z.date(),
    profile: z.record(z.string(), z.unknown()),
    ...(Object.fromEntries(SECTION_KEYS.map((key) => [key, Rows])) as Record<SectionKey, typeof Rows>),
  })
  .describe('Sessions carry public ids only; no token, hash or secret appears anywhere')
  .meta({ id: 'PersonalData' })

export const DeleteAccountInput = z.strictObject({ password: CurrentPassword.optional() }).optional()
