// The signing keys' rows (migration 0019_jwks).
import { sql } from 'kysely'
import type { Executor, Trx } from '../../../db/index.js'

export interface StoredKey {
  id: string
  publicKey: string
  privateKey: string
  createdAt: Date
  expiresAt: Date
}

// Selected under the fields' names, so a row is a StoredKey as it comes.
const columns = [
  'id',
  'public_key as publicKey',
  'private_key as privateKey',
  'created_at as createdAt',
  'expires_at as expiresAt',
] as const

/** The keys that sign or signed tokens still alive after `since`, newest first. */
export async function keysServedAfter(db: Executor, since: Date): Promise<StoredKey[]> {
  return db.selectFrom('jwks').select(columns).where('expires_at', '>', since).orderBy('created_at', 'desc').execute()
}

export async function insertKey(db: Executor, key: StoredKey): Promise<void> {
  await db
    .insertInto('jwks')
    .values({
      id: key.id,
      public_key: key.publicKey,
      private_key: key.privateKey,
      created_at: key.createdAt,
      expires_at: key.expiresAt,
    })
    .execute()
}

/**
 * One writer of new keys at a time, across instances: two that find no key at once would each make
 * one (harmless, both are served) but the lock keeps the table to one new key per rotation.
 */
export async function lockKeyWriters(trx: Trx): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext('insight.jwks'))`.execute(trx)
}

/** Deletes the keys whose last token expired before `before`; how many. */
export async function deleteRetiredKeys(db: Executor, before: Date): Promise<number> {
  const result = await db.deleteFrom('jwks').where('expires_at', '<=', before).executeTakeFirst()
  return Number(result.numDeletedRows)
}
