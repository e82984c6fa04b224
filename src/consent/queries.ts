import type { Executor } from '../../db/index.js'
import { newId } from '../shared/ids.js'
import type { ConsentType } from './tables.js'

/** One decision, as the log keeps it. */
export interface ConsentRecord {
  id: string
  type: ConsentType
  version: string
  granted: boolean
  createdAt: Date
}

// Returned under the fields' names, so a row is a ConsentRecord as it comes.
const columns = ['id', 'type', 'version', 'granted', 'created_at as createdAt'] as const

export async function insertConsents(
  db: Executor,
  userId: string,
  items: ReadonlyArray<{ type: ConsentType; version: string; granted: boolean }>,
  source: { ip: string | null; userAgent: string | null },
): Promise<ConsentRecord[]> {
  if (items.length === 0) return []
  return db
    .insertInto('consent_record')
    .values(
      items.map((c) => ({
        id: newId(),
        user_id: userId,
        type: c.type,
        version: c.version,
        granted: c.granted,
        ip: source.ip,
        user_agent: source.userAgent?.slice(0, 512) ?? null,
      })),
    )
    .returning(columns)
    .execute()
}

/**
 * Newest first. Records of the same instant (one statement, or one millisecond of the embedded
 * database's clock) come in the reverse of the order they were recorded in, so the first of each type
 * is the decision in force.
 */
export async function listConsents(db: Executor, userId: string): Promise<ConsentRecord[]> {
  return db
    .selectFrom('consent_record')
    .select(columns)
    .where('user_id', '=', userId)
    .orderBy('created_at', 'desc')
    .orderBy('seq', 'desc')
    .execute()
}
