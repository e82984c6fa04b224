// /api/v1/admin/*: every route's policy is ADMIN, the admin or owner role (403 FORBIDDEN for anyone
// else), checked at onRequest so a member learns nothing about the admin schemas, not even from a 400.
import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import type { z } from 'zod'
import { ErrorSchema } from '../shared/errors.js'
import { ADMIN } from '../shared/route-policy.js'
import { contextOf } from '../shared/context.js'
import {
  AdminUserSchema,
  AnalyticsQuery,
  AuditListSchema,
  AuditQuery,
  BanBody,
  EmptyBody,
  ManagedUserSchema,
  ListUsersQuery,
  RevokedSchema,
  SetPlanBody,
  SetPremiumPlusBody,
  SetRoleBody,
  toAdminUserJson,
  toAuditListJson,
  toManagedUserJson,
  toUserListJson,
  UsageAnalyticsSchema,
  UserIdParams,
  UserListSchema,
} from './schemas.js'
import {
  banUser,
  getUsageAnalytics,
  getUser,
  listAuditEvents,
  listUsers,
  revokeUserSessions,
  setUserPlan,
  setUserRole,
  unbanUser,
  type AdminDeps,
} from './service.js'

const tags = ['admin']
const errors = { 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema }

export default async function adminRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()
  const deps: AdminDeps = { db: app.db, clock: app.clock }

  /** The options of an admin route: the ADMIN policy, the admin tag, `ok` for 200 and the shared errors. */
  const adminRoute = <Parts extends object, Ok extends z.ZodType>(
    operationId: string,
    summary: string,
    parts: Parts,
    ok: Ok,
  ) => ({
    config: { policy: ADMIN },
    schema: { operationId, tags, summary, ...parts, response: { 200: ok, ...errors } },
  })

  app.get(
    '/api/v1/admin/users',
    adminRoute(
      'listUsers',
      'Find users by exact email, text, role or plan; newest first',
      { querystring: ListUsersQuery },
      UserListSchema,
    ),
    async (request) => {
      const { limit, cursor, ...filters } = request.query
      return toUserListJson(await listUsers(deps, contextOf(request), filters, { limit, cursor }))
    },
  )

  app.get(
    '/api/v1/admin/users/:id',
    adminRoute(
      'getUser',
      'One user with counts of their sessions, entries, results and payments',
      { params: UserIdParams },
      AdminUserSchema,
    ),
    async (request) => toAdminUserJson(await getUser(deps, contextOf(request), request.params.id)),
  )

  app.post(
    '/api/v1/admin/users/:id/make-admin',
    adminRoute(
      'makeUserAdmin',
      'Give a user the admin role (idempotent)',
      { params: UserIdParams, body: EmptyBody },
      ManagedUserSchema,
    ),
    async (request) => toManagedUserJson(await setUserRole(deps, contextOf(request), request.params.id, 'admin', 'make-admin')),
  )

  app.post(
    '/api/v1/admin/users/:id/role',
    adminRoute(
      'setUserRole',
      "Set a user's role to member or admin; demoting an admin ends their sessions",
      { params: UserIdParams, body: SetRoleBody },
      ManagedUserSchema,
    ),
    async (request) =>
      toManagedUserJson(await setUserRole(deps, contextOf(request), request.params.id, request.body.role, 'role')),
  )

  app.post(
    '/api/v1/admin/users/:id/premium-plus',
    adminRoute(
      'setUserPremiumPlus',
      'Put a user on premium_plus, until expiresAt or without end',
      { params: UserIdParams, body: SetPremiumPlusBody },
      ManagedUserSchema,
    ),
    async (request) =>
      toManagedUserJson(
        await setUserPlan(deps, contextOf(request), request.params.id, { ...request.body, plan: 'premium_plus' }, 'premium-plus'),
      ),
  )

  app.post(
    '/api/v1/admin/users/:id/plan',
    adminRoute(
      'setUserPlan',
      "Set a user's plan, until expiresAt or without end",
      { params: UserIdParams, body: SetPlanBody },
      ManagedUserSchema,
    ),
    async (request) => toManagedUserJson(await setUserPlan(deps, contextOf(request), request.params.id, request.body, 'plan')),
  )

  app.post(
    '/api/v1/admin/users/:id/revoke-sessions',
    adminRoute('revokeUserSessions', 'End every session of a user', { params: UserIdParams, body: EmptyBody }, RevokedSchema),
    async (request) => revokeUserSessions(deps, contextOf(request), request.params.id),
  )

  app.post(
    '/api/v1/admin/users/:id/ban',
    adminRoute(
      'banUser',
      'Suspend a user until unbanned or expiresAt: every session ends, every sign-in is 403 BANNED_USER',
      { params: UserIdParams, body: BanBody },
      AdminUserSchema,
    ),
    async (request) => toAdminUserJson(await banUser(deps, contextOf(request), request.params.id, request.body)),
  )

  app.post(
    '/api/v1/admin/users/:id/unban',
    adminRoute('unbanUser', "Lift a user's suspension", { params: UserIdParams, body: EmptyBody }, AdminUserSchema),
    async (request) => toAdminUserJson(await unbanUser(deps, contextOf(request), request.params.id)),
  )

  app.get(
    '/api/v1/admin/analytics/usage',
    adminRoute(
      'getUsageAnalytics',
      'Users by role and plan, sign-ups per day, active sessions, usage and paid payments over a UTC date range',
      { querystring: AnalyticsQuery },
      UsageAnalyticsSchema,
    ),
    async (request) => getUsageAnalytics(deps, contextOf(request), request.query),
  )

  app.get(
    '/api/v1/admin/audit',
    adminRoute('listAuditEvents', 'The audit log, newest first', { querystring: AuditQuery }, AuditListSchema),
    async (request) => {
      const { limit, cursor, ...filters } = request.query
      return toAuditListJson(await listAuditEvents(deps, contextOf(request), filters, { limit, cursor }))
    },
  )
}
