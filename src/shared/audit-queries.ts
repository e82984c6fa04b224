// The audit trail's one statement. Reading it is the admin listing's (src/admin/queries.ts).
import { json, type Executor } from '../../db/index.js'
import { newId } from './ids.js'

/** One audit_event row as the caller means it: `details` already rid of secrets. */
interface AuditRow {
  actorId: string | null
  action: string
  targetType: string | null
  targetId: string | null
  ip: string | null
  details: unknown
}

export async function insertAuditEvent(db: Executor, row: AuditRow): Promise<void> {
  await db
    .insertInto('audit_event')
    .values({
      id: newId(),
      actor_id: row.actorId,
      action: row.action,
      target_type: row.targetType,
      target_id: row.targetId,
      ip: row.ip,
      details: json(row.details),
    })
    .execute()
}
