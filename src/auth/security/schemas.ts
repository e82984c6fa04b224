// The security activity of the signed-in user's own account, as the contract declares it
// (me.listSecurityEvents). Only zod here: the contract (src/contract/) reads this module.
import { z } from 'zod'
import { CursorParam, Limit } from '../../shared/cursor.js'

/** What happened, in words of the account's owner (events.ts maps the audit trail's actions to them). */
export const SECURITY_EVENT_KINDS = [
  'account_created',
  'sign_in',
  'sign_in_failed',
  'two_factor_failed',
  'trusted_device_used',
  'password_reset',
  'password_changed',
  'email_changed',
  'email_verified',
  'provider_linked',
  'provider_unlinked',
  'account_claimed',
  'two_factor_enabled',
  'two_factor_disabled',
  'backup_codes_regenerated',
  'passkey_added',
  'passkey_renamed',
  'passkey_removed',
  'phone_number_added',
  'session_revoked',
  'other_sessions_revoked',
  'all_sessions_revoked',
  'account_secured',
  'data_exported',
  'guest_data_adopted',
  'banned',
  'unbanned',
  'role_changed',
  'sessions_revoked_by_admin',
  'second_factor_removed_by_admin',
  'impersonated',
] as const
export type SecurityEventKind = (typeof SECURITY_EVENT_KINDS)[number]

export const ListSecurityEventsQuery = z.strictObject({ limit: Limit, cursor: CursorParam.optional() })
export type ListSecurityEventsInput = z.infer<typeof ListSecurityEventsQuery>

export const SecurityEventSchema = z
  .object({
    id: z.string(),
    kind: z.enum(SECURITY_EVENT_KINDS),
    at: z.date(),
    ip: z.string().nullable().describe('The address the request came from, when one was recorded'),
    userAgent: z.string().nullable().describe('The browser of a sign-in (as it named itself), else null'),
    method: z
      .string()
      .nullable()
      .describe(
        "How a sign-in (or a refused one) proved who it was: 'email' (password), 'email-otp', 'magic-link', 'passkey', 'idp'; else null",
      ),
    byAdministrator: z.boolean().describe('Done to the account by an administrator (who is not shown)'),
  })
  .meta({ id: 'SecurityEvent' })

export const SecurityEventPageSchema = z
  .object({ items: z.array(SecurityEventSchema), nextCursor: z.string().nullable() })
  .meta({ id: 'SecurityEventPage' })
