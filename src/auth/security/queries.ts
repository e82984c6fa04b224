// SQL of the security notices: the account's own security events (read from the audit trail), the
// devices it signed in from, and the notices' links (rows of `verification`).
import { sql } from 'kysely'
import type { Executor } from '../../../db/index.js'
import { exactTime, newestFirst, type PageRequest } from '../../shared/pagination.js'

export interface SecurityEventRow {
  id: string
  action: string
  actor_id: string | null
  ip: string | null
  user_agent: string | null
  method: string | null
  at: Date
  cursor_at: string
}

/**
 * The user's security events, newest first: the events about their account (target: the user) and
 * the sign-ins and session revocations they made (target: a session of theirs). Only `actions`:
 * what the user did to others (an admin's acts) never appears, only what was done to them.
 */
export function securityEventsOf(
  db: Executor,
  userId: string,
  actions: { aboutUser: readonly string[]; onOwnSession: readonly string[] },
  page: PageRequest,
): Promise<SecurityEventRow[]> {
  const query = db
    .selectFrom('audit_event')
    .select([
      'id',
      'action',
      'actor_id',
      'ip',
      'at',
      sql<string | null>`details->>'userAgent'`.as('user_agent'),
      sql<string | null>`details->>'method'`.as('method'),
      exactTime('at').as('cursor_at'),
    ])
    .where((eb) =>
      eb.or([
        eb.and([eb('target_type', '=', 'user'), eb('target_id', '=', userId), eb('action', 'in', actions.aboutUser)]),
        eb.and([eb('target_type', '=', 'session'), eb('actor_id', '=', userId), eb('action', 'in', actions.onOwnSession)]),
      ]),
    )
  return newestFirst(query, page, 'at').execute()
}

/** Whether the user signed in before the sign-in just recorded (its audit event is one of them). */
export async function signedInBefore(db: Executor, userId: string): Promise<boolean> {
  const rows = await db
    .selectFrom('audit_event')
    .select('id')
    .where('actor_id', '=', userId)
    .where('action', '=', 'auth.sign_in')
    .limit(2)
    .execute()
  return rows.length > 1
}

/** Which of `deviceHashes` the account `userId` remembers (at most one: each is bound to one account). */
export async function knownDeviceOf(db: Executor, userId: string, deviceHashes: readonly string[]): Promise<string | undefined> {
  if (deviceHashes.length === 0) return undefined
  const row = await db
    .selectFrom('known_device')
    .select('device_hash')
    .where('user_id', '=', userId)
    .where('device_hash', 'in', deviceHashes)
    .executeTakeFirst()
  return row?.device_hash
}

/** A device the account has not seen before. */
export async function insertKnownDevice(db: Executor, userId: string, deviceHash: string, now: Date): Promise<void> {
  await db
    .insertInto('known_device')
    .values({ user_id: userId, device_hash: deviceHash, first_seen_at: now, last_seen_at: now })
    .execute()
}

/** A known device's id rotated: its row is found by the new hash from now on, seen now. False when no row had `from`. */
export async function moveKnownDevice(db: Executor, userId: string, from: string, to: string, now: Date): Promise<boolean> {
  const moved = await db
    .updateTable('known_device')
    .set({ device_hash: to, last_seen_at: now })
    .where('user_id', '=', userId)
    .where('device_hash', '=', from)
    .executeTakeFirst()
  return moved.numUpdatedRows > 0n
}

/** The account remembers no device any more; returns how many it forgot. */
export async function forgetKnownDevices(db: Executor, userId: string): Promise<number> {
  const rows = await db.deleteFrom('known_device').where('user_id', '=', userId).returning('device_hash').execute()
  return rows.length
}

/** The address of the user and whether it is verified, read in the caller's transaction. */
export async function addressOf(db: Executor, userId: string): Promise<{ email: string; verified: boolean } | undefined> {
  const row = await db.selectFrom('user').select(['email', 'email_verified']).where('id', '=', userId).executeTakeFirst()
  return row && { email: row.email, verified: row.email_verified }
}

/** The account must choose a new password before its password signs in again. */
export async function requirePasswordReset(db: Executor, userId: string, now: Date): Promise<void> {
  await db.updateTable('user').set({ password_reset_required: true, updated_at: now }).where('id', '=', userId).execute()
}
