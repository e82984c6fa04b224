// better-auth's admin plugin's routes, under /api/auth/admin/ with its names, bodies, answers and
// 403 codes, so an admin panel built on `adminClient()` works unchanged. Each route calls the same
// service, with the same rules, as the admin procedure that does the same act (contract.ts): one
// rule, two wire formats. Who may call is each route's policy (an admin or an owner, with a second
// factor when REQUIRE_ADMIN_TWO_FACTOR is on); anyone else gets the plugin's own 403 code. The
// routes are declared and served as auth's are (src/auth/routes/serve.ts).
import type { z } from 'zod'
import { NoBodyOrNull, toSessionJson, toUserJson } from '../auth/core/schemas.js'
import { declareRoutes, serveRoutes } from '../auth/routes/serve.js'
import { contextOf } from '../shared/context.js'
import { AppError, type ErrorCode } from '../shared/errors.js'
import type { RoutePolicy } from '../shared/route-policy.js'
import { ROLES, type Role } from '../shared/roles.js'
import type { Plan } from '../shared/plans.js'
import { invalidInput } from '../shared/validation.js'
import { currentUser } from '../user/signed-in.js'
import { AdminSessionCookie } from './admin-session-cookie.js'
import {
  BanBody,
  FILTER_VALUES,
  GetUserQuery,
  ListUsersQuery,
  PluginUserSchema,
  RevokeSessionBody,
  SessionAnswer,
  SessionListAnswer,
  SetRoleBody,
  Success,
  toPluginUser,
  UserAnswer,
  UserIdBody,
  UserListAnswer,
} from './auth-schemas.js'
import { IMPERSONATION_MS, impersonate, stopImpersonating, userNotFound } from './impersonation.js'
import type { UserSearch } from './queries.js'
import { removeUser } from './removal.js'
import { banUser, getUser, revokeUserSessions, searchUsers, setUserRole, unbanUser, type AdminDeps } from './service.js'
import { listUserSessions, revokeUserSession } from './sessions.js'

const tags = ['admin'] as const

/** An admin or owner; anyone else gets the plugin's code for the act (its message as better-auth words it). */
const adminOnly = (code: ErrorCode, message: string, extra: Partial<RoutePolicy> = {}): RoutePolicy => ({
  access: { roles: ['admin', 'owner'], refusal: { code, message } },
  ...extra,
})
// A read that writes an audit row: no cross-site request reaches it (as the admin procedures' audited reads).
const auditedRead = { refusesCrossSite: true } as const

// Every route of the plugin may answer these in the one error shape (better-auth's codes).
const errors = [400, 401, 403, 404] as const

const mayBan = adminOnly('YOU_ARE_NOT_ALLOWED_TO_BAN_USERS', 'You are not allowed to ban users')
const mayRevoke = adminOnly('YOU_ARE_NOT_ALLOWED_TO_REVOKE_USERS_SESSIONS', 'You are not allowed to revoke users sessions')

/** The services say NOT_FOUND for a user id nobody has; the plugin says USER_NOT_FOUND. */
async function aboutUser<T>(work: Promise<T>): Promise<T> {
  try {
    return await work
  } catch (err) {
    if (err instanceof AppError && err.code === 'NOT_FOUND') throw userNotFound()
    throw err
  }
}

const noSuchRole = () =>
  new AppError(400, 'YOU_ARE_NOT_ALLOWED_TO_SET_NON_EXISTENT_VALUE', 'You are not allowed to set a non-existent role value')

/** list-users' query as the search the service runs. */
function searchOf(query: z.infer<typeof ListUsersQuery>): UserSearch {
  const { searchValue, searchField, searchOperator, limit, offset, sortBy, sortDirection, filterField, filterValue } = query
  if ((filterField === undefined) !== (filterValue === undefined))
    throw invalidInput(['filterValue'], 'filterField and filterValue go together')
  let filter: UserSearch['filter']
  if (filterField !== undefined) {
    if (!(FILTER_VALUES[filterField] as readonly string[]).includes(filterValue!))
      throw invalidInput(['filterValue'], `must be one of ${FILTER_VALUES[filterField].join(', ')}`)
    filter =
      filterField === 'banned'
        ? { field: 'banned', value: filterValue === 'true' }
        : filterField === 'role'
          ? { field: 'role', value: filterValue as Role }
          : { field: 'plan', value: filterValue as Plan }
  }
  return {
    search: searchValue === undefined ? undefined : { field: searchField, operator: searchOperator, value: searchValue },
    filter,
    sort: { field: sortBy, direction: sortDirection },
    limit,
    offset,
  }
}

/** The routes of better-auth's admin plugin, keyed by operationId, in the order they are registered. */
export const adminPluginRoutes = declareRoutes({
  adminListUsers: {
    method: 'GET',
    path: '/api/auth/admin/list-users',
    tags,
    policy: adminOnly('YOU_ARE_NOT_ALLOWED_TO_LIST_USERS', 'You are not allowed to list users', auditedRead),
    summary: 'Users whose email or name contains, starts or ends with a text, by offset and sort, and how many in all',
    query: ListUsersQuery,
    response: { 200: UserListAnswer },
    errors,
  },
  adminGetUser: {
    method: 'GET',
    path: '/api/auth/admin/get-user',
    tags,
    policy: adminOnly('YOU_ARE_NOT_ALLOWED_TO_GET_USER', 'You are not allowed to get user', auditedRead),
    summary: 'One user (audited, as the getUser procedure)',
    query: GetUserQuery,
    response: { 200: PluginUserSchema },
    errors,
  },
  adminSetRole: {
    method: 'POST',
    path: '/api/auth/admin/set-role',
    tags,
    policy: adminOnly('YOU_ARE_NOT_ALLOWED_TO_CHANGE_USERS_ROLE', 'You are not allowed to change users role'),
    summary: "Set a user's role to member or admin (the setUserRole procedure's rules: never owner, never your own)",
    body: SetRoleBody,
    response: { 200: UserAnswer },
    errors,
  },
  adminBanUser: {
    method: 'POST',
    path: '/api/auth/admin/ban-user',
    tags,
    policy: mayBan,
    summary: 'Suspend a user: every session ends at once, every sign-in is 403 BANNED_USER (the banUser procedure)',
    body: BanBody,
    response: { 200: UserAnswer },
    errors,
  },
  adminUnbanUser: {
    method: 'POST',
    path: '/api/auth/admin/unban-user',
    tags,
    policy: mayBan,
    summary: "Lift a user's suspension (the unbanUser procedure)",
    body: UserIdBody,
    response: { 200: UserAnswer },
    errors,
  },
  adminListUserSessions: {
    method: 'POST',
    path: '/api/auth/admin/list-user-sessions',
    tags,
    policy: adminOnly('YOU_ARE_NOT_ALLOWED_TO_LIST_USERS_SESSIONS', 'You are not allowed to list users sessions'),
    summary: "A user's live sessions, newest first, impersonations included (audited)",
    body: UserIdBody,
    response: { 200: SessionListAnswer },
    errors,
  },
  adminRevokeUserSession: {
    method: 'POST',
    path: '/api/auth/admin/revoke-user-session',
    tags,
    policy: mayRevoke,
    summary: "End one session by its public id, passed as `sessionToken` (404 when there is none; never an owner's)",
    body: RevokeSessionBody,
    response: { 200: Success },
    errors,
  },
  adminRevokeUserSessions: {
    method: 'POST',
    path: '/api/auth/admin/revoke-user-sessions',
    tags,
    policy: mayRevoke,
    summary: 'End every session of a user, and every impersonation opened from them (the revokeUserSessions procedure)',
    body: UserIdBody,
    response: { 200: Success },
    errors,
  },
  adminRemoveUser: {
    method: 'POST',
    path: '/api/auth/admin/remove-user',
    tags,
    policy: adminOnly('YOU_ARE_NOT_ALLOWED_TO_DELETE_USERS', 'You are not allowed to delete users'),
    summary: 'Delete a user as their own deletion does (payments and consents kept, anonymised); never an owner or yourself',
    body: UserIdBody,
    response: { 200: Success },
    errors,
  },
  adminImpersonateUser: {
    method: 'POST',
    path: '/api/auth/admin/impersonate-user',
    tags,
    policy: adminOnly('YOU_ARE_NOT_ALLOWED_TO_IMPERSONATE_USERS', 'You are not allowed to impersonate users'),
    summary:
      "Open a member's account as they see it, for an hour at most, read-only unless IMPERSONATION_ALLOWS_WRITES; your session is kept aside until stop-impersonating",
    body: UserIdBody,
    response: { 200: SessionAnswer },
    errors,
  },
  adminStopImpersonating: {
    method: 'POST',
    path: '/api/auth/admin/stop-impersonating',
    tags,
    // The impersonation's own session calls it, in read-only support mode too: it ends that session.
    policy: { whileImpersonating: 'allowed' },
    summary:
      'End the impersonation and get your own session back (400 when not impersonating; 401 when your session has ended: sign in again)',
    body: NoBodyOrNull,
    response: { 200: SessionAnswer },
    errors,
  },
})

export default serveRoutes(adminPluginRoutes, (app) => {
  const deps: AdminDeps = { db: app.db, clock: app.clock, notices: app.securityNotices }
  const impersonation = { ...deps, sessions: app.sessions }
  const adminSessionCookie = new AdminSessionCookie(app.config.auth)
  const success = { success: true as const }
  return {
    adminListUsers: async (request) => {
      const search = searchOf(request.query)
      const { users, total } = await searchUsers(deps, contextOf(request), search)
      return { users: users.map(toPluginUser), total, limit: search.limit, offset: search.offset }
    },
    adminGetUser: async (request) => toPluginUser((await aboutUser(getUser(deps, contextOf(request), request.query.id))).user),
    adminSetRole: async (request) => {
      const { userId } = request.body
      const role = Array.isArray(request.body.role) ? request.body.role[0] : request.body.role
      if (!(ROLES as readonly string[]).includes(role)) throw noSuchRole()
      return { user: toPluginUser(await aboutUser(setUserRole(deps, contextOf(request), userId, role as Role, 'set-role'))) }
    },
    adminBanUser: async (request) => {
      const { userId, banReason, banExpiresIn } = request.body
      const expiresAt =
        banExpiresIn === undefined ? undefined : new Date(app.clock.now().getTime() + banExpiresIn * 1000).toISOString()
      const input = { reason: banReason ?? 'No reason', ...(expiresAt && { expiresAt }) }
      const { user } = await aboutUser(banUser(deps, contextOf(request), userId, input))
      return { user: toPluginUser(user) }
    },
    adminUnbanUser: async (request) => {
      const { user } = await aboutUser(unbanUser(deps, contextOf(request), request.body.userId))
      return { user: toPluginUser(user) }
    },
    adminListUserSessions: async (request) => {
      const sessions = await aboutUser(listUserSessions(deps, contextOf(request), request.body.userId))
      return { sessions: sessions.map(toSessionJson) }
    },
    adminRevokeUserSession: async (request) => {
      await revokeUserSession(deps, contextOf(request), request.body.sessionToken)
      return success
    },
    adminRevokeUserSessions: async (request) => {
      await aboutUser(revokeUserSessions(deps, contextOf(request), request.body.userId))
      return success
    },
    adminRemoveUser: async (request) => {
      await aboutUser(removeUser(deps, contextOf(request), request.body.userId))
      return success
    },
    adminImpersonateUser: async (request, reply) => {
      const admin = currentUser(request)
      const started = await impersonate(
        impersonation,
        contextOf(request),
        { id: admin.id, session: request.session! },
        request.body.userId,
      )
      adminSessionCookie.keep(request, reply, app.sessionCookie.name, IMPERSONATION_MS / 1000)
      app.sessionCookie.set(reply, started.token, { rememberMe: false, expiresAt: started.session.expiresAt })
      return { session: toSessionJson(started.session), user: toUserJson(started.user) }
    },
    adminStopImpersonating: async (request, reply) => {
      const restored = await stopImpersonating(
        impersonation,
        contextOf(request),
        { user: currentUser(request), session: request.session! },
        adminSessionCookie.read(request),
      )
      adminSessionCookie.clear(reply)
      if (!restored) {
        app.sessionCookie.clear(reply)
        throw new AppError(401, 'UNAUTHORIZED', "The administrator's session has ended: sign in again")
      }
      app.sessionCookie.set(reply, restored.token, restored.session)
      return { session: toSessionJson(restored.session), user: toUserJson(restored.user) }
    },
  }
})
