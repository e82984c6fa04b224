// better-auth's admin plugin's wire (/api/auth/admin/*): its bodies, queries and answers, as its
// client `adminClient()` sends and reads them. The rules behind them are the admin procedures'.
import { z } from 'zod'
import { SessionSchema, toUserJson, UserSchema } from '../auth/core/schemas.js'
import { ManagedUserSchema } from './schemas.js'
import { ROLES } from '../shared/roles.js'
import { PLANS } from '../shared/plans.js'
import { PlainText } from '../shared/validation.js'
import type { ManagedUser } from './queries.js'

// As the admin procedures' ids: an imported user keeps the previous system's id, any characters.
const UserId = z.string().min(1).max(200)
export const UserIdBody = z.strictObject({ userId: UserId })

/** The user with the plugin's suspension fields (`banExpires`, where the admin procedures say `banExpiresAt`). */
export const PluginUserSchema = ManagedUserSchema.omit({ banExpiresAt: true })
  .extend({ banExpires: ManagedUserSchema.shape.banExpiresAt })
  .meta({ id: 'AdminPluginUser' })

export const toPluginUser = (u: ManagedUser): z.infer<typeof PluginUserSchema> => ({
  ...toUserJson(u),
  banned: u.banned,
  banReason: u.banReason,
  banExpires: u.banExpiresAt,
})

export const UserAnswer = z.object({ user: PluginUserSchema })
export const Success = z.object({ success: z.literal(true) })
/** What impersonate-user and stop-impersonating answer: the session now in the cookie, and its user. */
export const SessionAnswer = z.object({ session: SessionSchema, user: UserSchema })

const Count = (max: number) => z.coerce.number().int().min(0).max(max)

export const ListUsersQuery = z.strictObject({
  searchValue: PlainText(1, 254).optional(),
  searchField: z.enum(['email', 'name']).default('email'),
  searchOperator: z.enum(['contains', 'starts_with', 'ends_with']).default('contains'),
  limit: Count(100).pipe(z.number().min(1)).default(100),
  offset: Count(1_000_000).default(0),
  sortBy: z.enum(['createdAt', 'updatedAt', 'email', 'name']).default('createdAt'),
  sortDirection: z.enum(['asc', 'desc']).default('asc'),
  filterField: z.enum(['role', 'plan', 'banned']).optional(),
  filterValue: z.string().min(1).max(20).optional(),
  filterOperator: z.literal('eq').default('eq'),
})

/** A filter's value must be one of its field's: a role, a plan, or true/false. */
export const FILTER_VALUES = { role: ROLES, plan: PLANS, banned: ['true', 'false'] } as const

export const UserListAnswer = z
  .object({ users: z.array(PluginUserSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() })
  .meta({ id: 'AdminPluginUserList' })

export const GetUserQuery = z.strictObject({ id: UserId })

export const SetRoleBody = z.strictObject({
  userId: UserId,
  // better-auth takes a role or a list of them; a user here has exactly one.
  role: z.union([z.string().min(1).max(50), z.tuple([z.string().min(1).max(50)])]),
})

// A hundred years at most: longer is "until unbanned", said by leaving it out.
const MAX_BAN_SECONDS = 100 * 365 * 24 * 60 * 60

export const BanBody = z.strictObject({
  userId: UserId,
  banReason: PlainText(1, 500).optional(),
  banExpiresIn: z.number().int().min(1).max(MAX_BAN_SECONDS).optional().describe('Seconds until the ban ends by itself'),
})

export const RevokeSessionBody = z.strictObject({
  sessionToken: z.string().min(1).max(64).describe("The session's public `id` (list-user-sessions); no token is ever shown"),
})

export const SessionListAnswer = z.object({ sessions: z.array(SessionSchema) })
