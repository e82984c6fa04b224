// The audit log: written in the same transaction as the act it records. Never a password, token or secret.
import type { Executor } from '../../db/index.js'
import { insertAuditEvent } from './audit-queries.js'

export interface AuditEvent {
  actorId: string | null
  action: string
  targetType?: string
  targetId?: string | null
  ip?: string | null
  details?: Record<string, unknown>
}

const SECRET_KEY = /pass|token|secret|hash|cookie|authorization/i

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
