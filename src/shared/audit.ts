// The audit log: written in the same transaction as the act it records. Never a password, token or secret.
import type { Executor } from '../../db/index.js'
import { insertAuditEvent } from './audit-queries.js'
import type { RequestContext } from './context.js'

export interface AuditEvent {
  actorId: string | null
  action: string
  targetType?: string
  targetId?: string | null
  ip?: string | null
  details?: Record<string, unknown>
}

// A passkey is a public key, not a secret: its id and counts may be recorded.
const SECRET_KEY = /pass(?!key)|token|secret|hash|cookie|authorization/i

/** Drops any key that looks like a secret, however deep, so a careless caller cannot leak one. */
function scrub(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(scrub)
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => !SECRET_KEY.test(k))
        .map(([k, v]) => [k, scrub(v)]),
    )
  }
  return value
}

export async function recordAudit(db: Executor, event: AuditEvent): Promise<void> {
  await insertAuditEvent(db, {
    actorId: event.actorId,
    action: event.action,
    targetType: event.targetType ?? null,
    targetId: event.targetId ?? null,
    ip: event.ip ?? null,
    details: scrub(event.details ?? {}),
  })
}

/** An event on a user's own account, caused by that user (or by an attempt in their name), from `ctx.ip`. */
export async function recordUserEvent(
  db: Executor,
  ctx: Pick<RequestContext, 'ip'>,
  userId: string | null,
  action: string,
  details?: Record<string, unknown>,
): Promise<void> {
  await recordAudit(db, { actorId: userId, action, targetType: 'user', targetId: userId, ip: ctx.ip, details })
}
