// Passkeys' SQL: the `passkey` rows of a user, the one read a passkey sign-in makes (the passkey
// joined to its user, so the credential epoch comes with the credential). The ceremonies'
// challenges are `verification` rows, kept by src/auth/links/challenges.ts.
import type { Selectable } from 'kysely'
import type { Executor, Trx } from '../../../db/index.js'
import { newId } from '../../shared/ids.js'
import { toUserWithFlags, userColumns, type UserWithFlagsRow } from '../../user/rows.js'
import type { UserWithFlags } from '../../user/types.js'
import type { PasskeyTable } from './tables.js'
import { ownRow } from '../../shared/own-row.js'

/** A passkey as its owner sees it (better-auth's passkey model), and the user handle it was given. */
export interface Passkey {
  id: string
  userId: string
  name: string | null
  credentialID: string
  publicKey: string
  counter: number
  deviceType: string
  backedUp: boolean
  transports: string
  aaguid: string | null
  createdAt: Date
  lastUsedAt: Date | null
}

export interface StoredPasskey extends Passkey {
  userHandle: string
}

const columns = [
  'passkey.id',
  'passkey.user_id',
  'passkey.name',
  'passkey.credential_id',
  'passkey.public_key',
  'passkey.user_handle',
  'passkey.counter',
  'passkey.device_type',
  'passkey.backed_up',
  'passkey.transports',
  'passkey.aaguid',
  'passkey.created_at',
  'passkey.last_used_at',
] as const

/** The one mapping from a passkey row. */
function toPasskey(r: Selectable<PasskeyTable>): StoredPasskey {
  return {
    id: r.id,
    userId: r.user_id,
    name: r.name,
    credentialID: r.credential_id,
    publicKey: r.public_key,
    userHandle: r.user_handle,
    counter: Number(r.counter),
    deviceType: r.device_type,
    backedUp: r.backed_up,
    transports: r.transports,
    aaguid: r.aaguid,
    createdAt: r.created_at,
    lastUsedAt: r.last_used_at,
  }
}

export async function passkeysOf(db: Executor, userId: string): Promise<StoredPasskey[]> {
  const rows = await db
    .selectFrom('passkey')
    .select(columns)
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .orderBy('id')
    .execute()
  return rows.map(toPasskey)
}

/** The user's passkey `id`; undefined when there is none, or it is someone else's (the same answer). */
export async function findPasskeyOf(db: Executor, userId: string, id: string): Promise<StoredPasskey | undefined> {
  const row = await db.selectFrom('passkey').select(columns).where(ownRow({ id, userId })).executeTakeFirst()
  return row && toPasskey(row)
}

/**
 * A sign-in's one read: the passkey of `credentialId` with its user, whose credential epoch is read
 * in the same row read as the credential (sessions.ts, CheckedCredential).
 */
export async function findPasskeyForSignIn(
  db: Executor,
  credentialId: string,
): Promise<{ passkey: StoredPasskey; user: UserWithFlags } | undefined> {
  const row = await db
    .selectFrom('passkey')
    .innerJoin('user', 'user.id', 'passkey.user_id')
    .select([...columns, ...userColumns.map((c) => `user.${c} as u_${c}` as const)])
    .where('passkey.credential_id', '=', credentialId)
    .executeTakeFirst()
  if (!row) return undefined
  const user = Object.fromEntries(
    Object.entries(row)
      .filter(([k]) => k.startsWith('u_'))
      .map(([k, v]) => [k.slice(2), v]),
  ) as unknown as UserWithFlagsRow
  return { passkey: toPasskey(row), user: toUserWithFlags(user) }
}

export type NewPasskey = Omit<StoredPasskey, 'id' | 'lastUsedAt'>

/** The passkey; undefined when its credential id is already registered (to anyone). */
export async function insertPasskey(trx: Trx, p: NewPasskey): Promise<StoredPasskey | undefined> {
  const row = await trx
    .insertInto('passkey')
    .values({
      id: newId(),
      user_id: p.userId,
      name: p.name,
      credential_id: p.credentialID,
      public_key: p.publicKey,
      user_handle: p.userHandle,
      counter: p.counter,
      device_type: p.deviceType,
      backed_up: p.backedUp,
      transports: p.transports,
      aaguid: p.aaguid,
      created_at: p.createdAt,
    })
    .onConflict((oc) => oc.column('credential_id').doNothing())
    .returning(columns)
    .executeTakeFirst()
  return row && toPasskey(row)
}

/**
 * Records a use: the new signature counter, only while the row still holds the counter the
 * assertion was checked against. False when the passkey was deleted or used by another sign-in
 * meanwhile (two assertions checked against one counter: only one may pass).
 */
export async function recordUse(db: Executor, id: string, counters: { was: number; now: number }, at: Date): Promise<boolean> {
  const result = await db
    .updateTable('passkey')
    .set({ counter: counters.now, last_used_at: at })
    .where('id', '=', id)
    .where('counter', '=', String(counters.was))
    .executeTakeFirst()
  return result.numUpdatedRows === 1n
}

export async function renamePasskey(db: Executor, userId: string, id: string, name: string): Promise<StoredPasskey | undefined> {
  const row = await db.updateTable('passkey').set({ name }).where(ownRow({ id, userId })).returning(columns).executeTakeFirst()
  return row && toPasskey(row)
}

export async function deletePasskeyOf(trx: Trx, userId: string, id: string): Promise<boolean> {
  const result = await trx.deleteFrom('passkey').where(ownRow({ id, userId })).executeTakeFirst()
  return result.numDeletedRows === 1n
}

/** Every passkey of the user (a take-back: they are ways in nobody has proven); how many. */
export async function deletePasskeysOf(trx: Trx, userId: string): Promise<number> {
  const result = await trx.deleteFrom('passkey').where('user_id', '=', userId).executeTakeFirst()
  return Number(result.numDeletedRows)
}
