import { z } from 'zod'
import { PlainText } from '../shared/validation.js'

export const CONSENT_TYPES = ['terms', 'privacy', 'marketing', 'analytics', 'ai_processing'] as const
export type ConsentType = (typeof CONSENT_TYPES)[number]

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
    createdAt: z.date(),
  })
  .meta({ id: 'ConsentRecord' })

const ConsentState = z.object({ granted: z.boolean(), version: z.string(), at: z.date() })

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
