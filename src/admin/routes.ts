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

  /** The options of a POST that changes one user (`:id`) and answers `ok`. */
  const userChange = <Body extends z.ZodType, Ok extends z.ZodType>(
    operationId: string,
    summary: string,
    body: Body,
    ok: Ok,
  ) => ({
    config: { policy: ADMIN },
    schema: { operationId, tags, summary, params: UserIdParams, body, response: { 200: ok, ...errors } },
  })

  app.get(
    '/api/v1/admin/users',
    {
      config: { policy: ADMIN },
      schema: {
        operationId: 'listUsers',
        tags,
        summary: 'Find users by exact email, text, role or plan; newest first',
        querystring: ListUsersQuery,
        response: { 200: UserListSchema, ...errors },
      },
    },
    async (request) => {
      const { limit, cursor, ...filters } = request.query
      return toUserListJson(await listUsers(deps, contextOf(request), filters, { limit, cursor }))
    },
  )

  app.get(
    '/api/v1/admin/users/:id',
    {
      config: { policy: ADMIN },
      schema: {
        operationId: 'getUser',
        tags,
        summary: 'One user with counts of their sessions, entries, results and payments',
        params: UserIdParams,
        response: { 200: AdminUserSchema, ...errors },
      },
    },
    async (request) => toAdminUserJson(await getUser(deps, contextOf(request), request.params.id)),
  )

  app.post(
    '/api/v1/admin/users/:id/make-admin',
    userChange('makeUserAdmin', 'Give a user the admin role (idempotent)', EmptyBody, ManagedUserSchema),
    async (request) => toManagedUserJson(await setUserRole(deps, contextOf(request), request.params.id, 'admin', 'make-admin')),
  )

  app.post(
    '/api/v1/admin/users/:id/role',
    userChange(
      'setUserRole',
      "Set a user's role to member or admin; demoting an admin ends their sessions",
      SetRoleBody,
      ManagedUserSchema,
    ),
    async (request) =>
      toManagedUserJson(await setUserRole(deps, contextOf(request), request.params.id, request.body.role, 'role')),
  )

  app.post(
    '/api/v1/admin/users/:id/premium-plus',
    userChange(
      'setUserPremiumPlus',
      'Put a user on premium_plus, until expiresAt or without end',
      SetPremiumPlusBody,
      ManagedUserSchema,
    ),
    async (request) =>
      toManagedUserJson(
        await setUserPlan(deps, contextOf(request), request.params.id, { ...request.body, plan: 'premium_plus' }, 'premium-plus'),
      ),
  )

  app.post(
    '/api/v1/admin/users/:id/plan',
    userChange('setUserPlan', "Set a user's plan, until expiresAt or without end", SetPlanBody, ManagedUserSchema),
    async (request) => toManagedUserJson(await setUserPlan(deps, contextOf(request), request.params.id, request.body, 'plan')),
  )

  app.post(
    '/api/v1/admin/users/:id/revoke-sessions',
    userChange('revokeUserSessions', 'End every session of a user', EmptyBody, RevokedSchema),
    async (request) => revokeUserSessions(deps, contextOf(request), request.params.id),
  )

  app.post(
    '/api/v1/admin/users/:id/ban',
    userChange(
      'banUser',
      'Suspend a user until unbanned or expiresAt: every session ends, every sign-in is 403 BANNED_USER',
      BanBody,
      AdminUserSchema,
    ),
    async (request) => toAdminUserJson(await banUser(deps, contextOf(request), request.params.id, request.body)),
  )

  app.post(
    '/api/v1/admin/users/:id/unban',
    userChange('unbanUser', "Lift a user's suspension", EmptyBody, AdminUserSchema),
    async (request) => toAdminUserJson(await unbanUser(deps, contextOf(request), request.params.id)),
  )

  app.get(
    '/api/v1/admin/analytics/usage',
    {
      config: { policy: ADMIN },
      schema: {
        operationId: 'getUsageAnalytics',
        tags,
        summary: 'Users by role and plan, sign-ups per day, active sessions, usage and paid payments over a UTC date range',
        querystring: AnalyticsQuery,
        response: { 200: UsageAnalyticsSchema, ...errors },
      },
    },
    async (request) => getUsageAnalytics(deps, contextOf(request), request.query),
  )

  app.get(
    '/api/v1/admin/audit',
    {
      config: { policy: ADMIN },
      schema: {
        operationId: 'listAuditEvents',
        tags,
        summary: 'The audit log, newest first',
        querystring: AuditQuery,
        response: { 200: AuditListSchema, ...errors },
      },
    },
    async (request) => {
      const { limit, cursor, ...filters } = request.query
      return toAuditListJson(await listAuditEvents(deps, contextOf(request), filters, { limit, cursor }))
    },
  )
}
