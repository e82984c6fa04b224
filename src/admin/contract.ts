// Admin operations: procedures admin.<name>, REST under /api/v1/admin. Every one needs the admin or
// owner role (403 FORBIDDEN for anyone else), checked before the input is read, so a member learns
// nothing about the admin schemas, not even from a 400.
import { failsWith, operation } from '../shared/operation.js'
import { ADMIN, ADMIN_AUDITED_READ } from '../shared/route-policy.js'
import {
  AdminUserSchema,
  AnalyticsQuery,
  AuditListSchema,
  AuditQuery,
  BanInput,
  ListUsersQuery,
  ManagedUserSchema,
  RevokedSchema,
  SecondFactorRemovedSchema,
  SetPlanInput,
  SetPremiumPlusInput,
  SetRoleInput,
  UsageAnalyticsSchema,
  UserIdParams,
  UserListSchema,
} from './schemas.js'

const admin = operation.meta({ policy: ADMIN, errors: failsWith(404) })
/** A read that writes an audit row: a cross-site link must not make an administrator's browser write one. */
const auditedRead = admin.meta({ policy: ADMIN_AUDITED_READ })

export const adminContract = operation.tag('admin').router({
  admin: {
    listUsers: admin
      .route({
        method: 'GET',
        path: '/admin/users',
        summary: 'Find users by exact email, text, role or plan; newest first',
      })
      .input(ListUsersQuery)
      .output(UserListSchema),

    getUser: admin
      .route({
        method: 'GET',
        path: '/admin/users/{id}',
        summary: 'One user with counts of their sessions, entries, results and payments',
      })
      .input(UserIdParams)
      .output(AdminUserSchema),

    makeUserAdmin: admin
      .route({ method: 'POST', path: '/admin/users/{id}/make-admin', summary: 'Give a user the admin role (idempotent)' })
      .input(UserIdParams)
      .output(ManagedUserSchema),

    setUserRole: admin
      .route({
        method: 'POST',
        path: '/admin/users/{id}/role',
        summary: "Set a user's role to member or admin; demoting an admin ends their sessions",
      })
      .input(SetRoleInput)
      .output(ManagedUserSchema),

    setUserPremiumPlus: admin
      .route({
        method: 'POST',
        path: '/admin/users/{id}/premium-plus',
        summary: 'Put a user on premium_plus, until expiresAt or without end (never yourself: 403)',
      })
      .input(SetPremiumPlusInput)
      .output(ManagedUserSchema),

    setUserPlan: admin
      .route({
        method: 'POST',
        path: '/admin/users/{id}/plan',
        summary: "Set a user's plan, until expiresAt or without end (never your own: 403)",
      })
      .input(SetPlanInput)
      .output(ManagedUserSchema),

    revokeUserSessions: admin
      .route({ method: 'POST', path: '/admin/users/{id}/revoke-sessions', summary: 'End every session of a user' })
      .input(UserIdParams)
      .output(RevokedSchema),

    removeUserSecondFactor: admin
      .route({
        method: 'POST',
        path: '/admin/users/{id}/remove-second-factor',
        summary:
          "Recovery of a user who lost their second factor: their TOTP, backup codes, trusted devices and passkeys go, every session ends, they are mailed a notice; audited. Not an owner's, not one's own",
      })
      .input(UserIdParams)
      .output(SecondFactorRemovedSchema),

    banUser: admin
      .route({
        method: 'POST',
        path: '/admin/users/{id}/ban',
        summary: 'Suspend a user until unbanned or expiresAt: every session ends, every sign-in is 403 BANNED_USER',
      })
      .input(BanInput)
      .output(AdminUserSchema),

    unbanUser: admin
      .route({ method: 'POST', path: '/admin/users/{id}/unban', summary: "Lift a user's suspension" })
      .input(UserIdParams)
      .output(AdminUserSchema),

    getUsageAnalytics: auditedRead
      .route({
        method: 'GET',
        path: '/admin/analytics/usage',
        summary: 'Users by role and plan, sign-ups per day, active sessions, usage and paid payments over a UTC date range',
      })
      .input(AnalyticsQuery)
      .output(UsageAnalyticsSchema),

    listAuditEvents: auditedRead
      .route({ method: 'GET', path: '/admin/audit', summary: 'The audit log, newest first' })
      .input(AuditQuery)
      .output(AuditListSchema),
  },
})
