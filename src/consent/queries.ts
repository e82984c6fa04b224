import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../../db/schema.js'
import { newId } from '../shared/ids.js'
import type { ConsentType } from './tables.js'
import type { Executor } from '../../db/index.js'


export interface ConsentRow {
  id: string
  type: ConsentType
  version: string
  granted: boolean
  created_at: Date
}

export async function insertConsents(
  db: Executor,
  userId: string,
  items: ReadonlyArray<{ type: ConsentType; version: string; granted: boolean }>,
  meta: { ip: string | null; userAgent: string | null },
): Promise<ConsentRow[]> {
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
        ip: meta.ip,
        user_agent: meta.userAgent?.slice(0, 512) ?? null,
      })),
    )
    .returning(['id', 'type', 'version', 'granted', 'created_at'])
    .execute()
}

/** Newest first; records written in one statement share a time, so the id breaks the tie stably. */
export function listConsents(db: Executor, userId: string): Promise<ConsentRow[]> {
  return db
    .selectFrom('consent_record')
    .select(['id', 'type', 'version', 'granted', 'created_at'])
    .where('user_id', '=', userId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute()
}
