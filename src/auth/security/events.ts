// The security activity of the signed-in user's own account (me.listSecurityEvents), read from the
// audit trail: sign-ins with their browser, address and time, and every change to the ways in.
import type { Executor } from '../../../db/index.js'
import { signedIn, type RequestContext } from '../../shared/context.js'
import { toPage, type Page } from '../../shared/pagination.js'
import type { ListSecurityEventsInput, SecurityEventKind } from './schemas.js'
import { securityEventsOf, type SecurityEventRow } from './queries.js'

export interface SecurityEvent {
  id: string
  kind: SecurityEventKind
  at: Date
  ip: string | null
  userAgent: string | null
  /** How a sign-in (or a failed one) was made, when it was recorded: 'email', 'email-otp', 'magic-link', 'passkey', 'phone-number', 'idp'. */
  method: string | null
  byAdministrator: boolean
}

/**
 * The audit actions about the user's account that the owner sees, and what each is called. An
 * action not listed (an admin's view of the account, a refused link) is not shown; details are
 * never shown (they may name other accounts): only the browser of a sign-in.
 */
const ABOUT_USER = {
  'auth.sign_up': 'account_created',
  'auth.sign_in_failed': 'sign_in_failed',
  'auth.two_factor.failed': 'two_factor_failed',
  'auth.two_factor.trusted_device_used': 'trusted_device_used',
  'auth.password_reset': 'password_reset',
  'auth.password_changed': 'password_changed',
  'auth.email_changed': 'email_changed',
  'auth.email_verified': 'email_verified',
  'auth.idp.account_linked': 'provider_linked',
  'auth.account_unlinked': 'provider_unlinked',
  'auth.idp.unverified_account_claimed': 'account_claimed',
  'auth.account_taken_back': 'account_claimed',
  'auth.two_factor.enabled': 'two_factor_enabled',
  'auth.two_factor.disabled': 'two_factor_disabled',
  'auth.two_factor.backup_codes_regenerated': 'backup_codes_regenerated',
  'auth.passkey.added': 'passkey_added',
  'auth.passkey.renamed': 'passkey_renamed',
  'auth.passkey.removed': 'passkey_removed',
  'auth.phone_number_added': 'phone_number_added',
  'auth.other_sessions_revoked': 'other_sessions_revoked',
  'auth.all_sessions_revoked': 'all_sessions_revoked',
  'auth.account_secured': 'account_secured',
  'personal_data.exported': 'data_exported',
  'auth.guest_adopted': 'guest_data_adopted',
  'admin.user.banned': 'banned',
  'admin.user.unbanned': 'unbanned',
  'admin.user.role_changed': 'role_changed',
  'admin.user.sessions_revoked': 'sessions_revoked_by_admin',
  'admin.user.second_factor_removed': 'second_factor_removed_by_admin',
  'admin.user.impersonated': 'impersonated',
} as const satisfies Record<string, SecurityEventKind>

/** The actions whose target is one of the user's sessions, done by the user. */
const ON_OWN_SESSION = {
  'auth.sign_in': 'sign_in',
  'auth.session_revoked': 'session_revoked',
} as const satisfies Record<string, SecurityEventKind>

const KIND_OF: Record<string, SecurityEventKind> = { ...ABOUT_USER, ...ON_OWN_SESSION }
const ACTIONS = { aboutUser: Object.keys(ABOUT_USER), onOwnSession: Object.keys(ON_OWN_SESSION) }

const toEvent =
  (userId: string) =>
  (row: SecurityEventRow): SecurityEvent => ({
    id: row.id,
    kind: KIND_OF[row.action]!,
    at: row.at,
    ip: row.ip,
    userAgent: row.action === 'auth.sign_in' ? row.user_agent : null,
    method: row.action === 'auth.sign_in' || row.action === 'auth.sign_in_failed' ? row.method : null,
    // Someone else acted on the account: only an administrator can; who it was is theirs to know.
    byAdministrator: row.actor_id !== null && row.actor_id !== userId,
  })

export async function listSecurityEvents(
  deps: { db: Executor },
  ctx: RequestContext,
  query: ListSecurityEventsInput,
): Promise<Page<SecurityEvent>> {
  const userId = signedIn(ctx)
  const rows = await securityEventsOf(deps.db, userId, ACTIONS, query)
  return toPage(rows, query.limit, toEvent(userId), (r) => ({ at: r.cursor_at, id: r.id }))
}
