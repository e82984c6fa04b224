import { z } from 'zod'
import type { ConsentRecord, Consents } from './service.js'
import { CONSENT_TYPES } from './tables.js'
import { PlainText } from '../shared/validation.js'

export const ConsentInput = z.strictObject({
  type: z.enum(CONSENT_TYPES),
  version: PlainText(1, 64),
  granted: z.boolean(),
})
export type ConsentInput = z.infer<typeof ConsentInput>

/** Initial consents carried by sign-up: at most one per type. */
export const SignUpConsents = z
  .array(ConsentInput)
  .max(CONSENT_TYPES.length)
  .refine((items) => new Set(items.map((c) => c.type)).size === items.length, 'Each consent type at most once')

export const ConsentRecordSchema = z
  .object({
    id: z.string(),
    type: z.enum(CONSENT_TYPES),
    version: z.string(),
    granted: z.boolean(),
    createdAt: z.string(),
  })
  .meta({ id: 'ConsentRecord' })
type ConsentRecordJson = z.infer<typeof ConsentRecordSchema>

const ConsentState = z.object({ granted: z.boolean(), version: z.string(), at: z.string() })

export const ConsentsSchema = z
  .object({
    current: z
      .object(
        Object.fromEntries(CONSENT_TYPES.map((t) => [t, ConsentState.optional()])) as Record<
          (typeof CONSENT_TYPES)[number],
          z.ZodOptional<typeof ConsentState>
        >,
      )
      .describe('The latest decision per consent type; a type never answered is absent'),
    history: z.array(ConsentRecordSchema).describe('Every record, newest first'),
  })
  .meta({ id: 'Consents' })

export const toConsentRecordJson = (r: ConsentRecord): ConsentRecordJson => ({
  id: r.id,
  type: r.type,
  version: r.version,
  granted: r.granted,
  createdAt: r.createdAt.toISOString(),
})

export function toConsentsJson(c: Consents): z.infer<typeof ConsentsSchema> {
  const current = Object.fromEntries(
    Object.entries(c.current).map(([type, state]) => [
      type,
      { granted: state.granted, version: state.version, at: state.at.toISOString() },
    ]),
  )
  return { current, history: c.history.map(toConsentRecordJson) }
}
