// The admin operations (contract.ts): users, roles, plans, bans, analytics and the audit log.
import { operationRoutes } from '../plugins/operations.js'
import { contextOf } from '../shared/context.js'
import { adminContract } from './contract.js'
import {
  banUser,
  getUsageAnalytics,
  getUser,
  listAuditEvents,
  listUsers,
  removeUserSecondFactor,
  revokeUserSessions,
  setUserPlan,
  setUserRole,
  unbanUser,
  type AdminDeps,
  type AdminUser,
} from './service.js'

/** A user with their counts, as one object. */
const flat = ({ user, counts }: AdminUser) => ({ ...user, counts })

export default operationRoutes(adminContract, (app) => {
  const deps: AdminDeps = { db: app.db, clock: app.clock, notices: app.securityNotices }
  return {
    admin: {
      listUsers: ({ limit, cursor, ...filters }, request) => listUsers(deps, contextOf(request), filters, { limit, cursor }),
      getUser: async ({ id }, request) => flat(await getUser(deps, contextOf(request), id)),
      makeUserAdmin: ({ id }, request) => setUserRole(deps, contextOf(request), id, 'admin', 'make-admin'),
      setUserRole: ({ id, role }, request) => setUserRole(deps, contextOf(request), id, role, 'role'),
      setUserPremiumPlus: ({ id, ...body }, request) =>
        setUserPlan(deps, contextOf(request), id, { ...body, plan: 'premium_plus' }, 'premium-plus'),
      setUserPlan: ({ id, ...body }, request) => setUserPlan(deps, contextOf(request), id, body, 'plan'),
      revokeUserSessions: ({ id }, request) => revokeUserSessions(deps, contextOf(request), id),
      removeUserSecondFactor: ({ id }, request) => removeUserSecondFactor(deps, contextOf(request), id),
      banUser: async ({ id, ...body }, request) => flat(await banUser(deps, contextOf(request), id, body)),
      unbanUser: async ({ id }, request) => flat(await unbanUser(deps, contextOf(request), id)),
      getUsageAnalytics: (input, request) => getUsageAnalytics(deps, contextOf(request), input),
      listAuditEvents: ({ limit, cursor, ...filters }, request) =>
        listAuditEvents(deps, contextOf(request), filters, { limit, cursor }),
    },
  }
})
