import { z } from 'zod'
import { UserSchema } from '../auth/core/schemas.js'
import { CursorParam, Limit } from '../shared/cursor.js'
import { ROLES } from '../shared/roles.js'
import { PlainText } from '../shared/validation.js'
import { PLANS } from '../shared/plans.js'

const FutureInstant = z.iso.datetime({ offset: true }).describe('ISO-8601 instant in the future')

// Not the shared IdParams (printable ASCII): an imported user keeps the id of the previous system,
// which may hold any character, and must stay reachable here.
const UserId = z.string().min(1).max(200)
export const UserIdParams = z.strictObject({ id: UserId })

export const ListUsersQuery = z.strictObject({
  email: PlainText(1, 254).toLowerCase().optional().describe('Exact email, case-insensitive'),
  q: PlainText(1, 100).optional().describe('Text contained in the email or the name'),
  role: z.enum(ROLES).optional(),
  plan: z.enum(PLANS).optional(),
  limit: Limit,
  cursor: CursorParam.optional(),
})

/** A user as admins see them: the user's own view and the suspension (better-auth's admin plugin fields). */
export const ManagedUserSchema = z
  .object({
    ...UserSchema.shape,
    banned: z.boolean(),
    banReason: z.string().nullable(),
    banExpiresAt: z.date().nullable().describe('null: until unbanned'),
  })
  .meta({ id: 'ManagedUser' })

export const UserListSchema = z
  .object({ items: z.array(ManagedUserSchema), nextCursor: z.string().nullable() })
  .meta({ id: 'UserList' })

export const AdminUserSchema = z
  .object({
    ...ManagedUserSchema.shape,
    counts: z.object({
      sessions: z.number().int().describe('Sessions not yet expired'),
      entries: z.number().int(),
      results: z.number().int(),
      payments: z.number().int(),
    }),
  })
  .meta({ id: 'AdminUser' })

export const SetRoleInput = z.strictObject({
  id: UserId,
  // owner is accepted by the schema only to be refused with 403: it is granted from the command line.
  role: z.enum(ROLES),
})

export const SetPremiumPlusInput = z.strictObject({ id: UserId, expiresAt: FutureInstant.optional() })

export const SetPlanInput = z.strictObject({ id: UserId, plan: z.enum(PLANS), expiresAt: FutureInstant.optional() })

export const BanInput = z.strictObject({
  id: UserId,
  reason: PlainText(1, 500),
  expiresAt: FutureInstant.optional().describe('When the ban ends by itself; without it, it lasts until unbanned'),
})

export const RevokedSchema = z.object({ revoked: z.number().int() })

/** What removing a user's second factor removed, and how many of their sessions ended. */
export const SecondFactorRemovedSchema = z.object({
  twoFactorRemoved: z.boolean(),
  passkeysRemoved: z.number().int(),
  sessionsRevoked: z.number().int(),
})

const CalendarDate = z.iso.date().describe('UTC calendar date, YYYY-MM-DD')

export const AnalyticsQuery = z.strictObject({
  from: CalendarDate.optional().describe('Inclusive; default 29 days before `to`'),
  to: CalendarDate.optional().describe('Inclusive; default today (UTC)'),
})

const countBy = <K extends string>(keys: readonly K[]) =>
  z.object(Object.fromEntries(keys.map((k) => [k, z.number().int()])) as Record<K, z.ZodNumber>)

export const UsageAnalyticsSchema = z
  .object({
    range: z.object({ from: z.string(), to: z.string() }),
    users: z.object({
      total: z.number().int(),
      byRole: countBy(ROLES),
      byPlan: countBy(PLANS).describe('By effective plan: a lapsed paid plan counts as free'),
      signupsPerDay: z.array(z.object({ date: z.string(), count: z.number().int() })),
    }),
    activeSessions: z.number().int(),
    usage: z.array(
      z.object({
        metric: z.string(),
        period: z.string().describe('YYYY-MM-DD for daily metrics, YYYY-MM for monthly ones'),
        total: z.number().int(),
        users: z.number().int(),
      }),
    ),
    payments: z.object({
      paidCount: z.number().int(),
      revenueIdr: z.number().int(),
      byProduct: z.record(z.string(), z.object({ count: z.number().int(), revenueIdr: z.number().int() })),
    }),
  })
  .meta({ id: 'UsageAnalytics' })

export const AuditQuery = z.strictObject({
  actorId: z.string().min(1).max(200).optional(),
  targetId: z.string().min(1).max(200).optional(),
  action: z.string().min(1).max(100).optional(),
  limit: Limit,
  cursor: CursorParam.optional(),
})

const AuditEventSchema = z
  .object({
    id: z.string(),
    at: z.date(),
    actorId: z.string().nullable(),
    action: z.string(),
    targetType: z.string().nullable(),
    targetId: z.string().nullable(),
    ip: z.string().nullable(),
    details: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'AuditEvent' })

export const AuditListSchema = z
  .object({ items: z.array(AuditEventSchema), nextCursor: z.string().nullable() })
  .meta({ id: 'AuditEventList' })
