// Admins and owners may read any user's journal entry or compatibility result for moderation.
// Each such read is audited before the record leaves the service; anyone else gets a 404.
import type { Executor } from '../../db/index.js'
import { recordAudit } from './audit.js'
import type { Role } from './roles.js'
import { notFound } from './errors.js'

/** Who is reading: the signed-in user's id and role. */
export interface Viewer {
  id: string
  role: Role
}

const canModerate = (user: Viewer): boolean => user.role === 'admin' || user.role === 'owner'

/**
 * Returns the `row` (as found by id) when `viewer` may see it, or throws 404: when there is none,
 * and when it is someone else's and the viewer is no moderator (never 403: a member must not learn
 * that the id exists). A moderator's read of someone else's record writes an audit event; if that
 * write fails the read fails, so no moderation read goes unrecorded.
 */
export async function authorizeRead<Row extends { id: string; user_id: string }>(
  deps: { db: Executor },
  viewer: Viewer,
  row: Row | undefined,
  record: { targetType: string; action: string; what: string },
  ip: string | null,
): Promise<Row> {
  if (!row) throw notFound(record.what)
  if (row.user_id === viewer.id) return row
  if (!canModerate(viewer)) throw notFound(record.what)
  await recordAudit(deps.db, {
    actorId: viewer.id,
    action: record.action,
    targetType: record.targetType,
    targetId: row.id,
    ip,
    details: { ownerId: row.user_id, role: viewer.role },
  })
  return row
}
