// GDPR consent: an append-only log per user; the current state is the latest record per type.
import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../../db/schema.js'
import type { RequestMeta } from '../auth/email/service.js'
import { insertConsents, listConsents, type ConsentRow } from './queries.js'
import type { ConsentInput, ConsentRecordJson, ConsentsJson } from './schemas.js'

export const toConsentJson = (r: ConsentRow): ConsentRecordJson => ({
  id: r.id,
  type: r.type,
  version: r.version,
  granted: r.granted,
  createdAt: r.created_at.toISOString(),
})

/** Appends consent records; pass the caller's transaction (sign-up records its consents in its own). */
export async function recordConsents(
  db: Kysely<Database> | Transaction<Database>,
  userId: string,
  items: readonly ConsentInput[],
  meta: RequestMeta,
): Promise<ConsentRecordJson[]> {
  const rows = await insertConsents(db, userId, items, meta)
  return rows.map(toConsentJson)
}

export async function getConsents(db: Kysely<Database>, userId: string): Promise<ConsentsJson> {
  const history = (await listConsents(db, userId)).map(toConsentJson)
  const current: ConsentsJson['current'] = {}
  for (const record of history) {
    // history is newest first: the first record seen of a type is its current state
    current[record.type] ??= { granted: record.granted, version: record.version, at: record.createdAt }
  }
  return { current, history }
}
