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
 * Lets `viewer` see a record owned by `ownerId`, or throws 404 (never 403: a member must not
 * learn that the id exists). A moderator's read of someone else's record writes an audit event;
 * if that write fails the read fails, so no moderation read goes unrecorded.
 */
export async function authorizeRead(
  deps: { db: Executor },
  viewer: Viewer,
  record: { ownerId: string; targetType: string; targetId: string; action: string; what: string },
  ip: string | null,
): Promise<void> {
  if (record.ownerId === viewer.id) return
  if (!canModerate(viewer)) throw notFound(record.what)
  await recordAudit(deps.db, {
    actorId: viewer.id,
    action: record.action,
    targetType: record.targetType,
    targetId: record.targetId,
    ip,
    details: { ownerId: record.ownerId, role: viewer.role },
  })
}
