// The guests' rows: a guest is a `user` row with `is_anonymous` (migration 0020_guests); what it
// made lives in the business tables under its id until it moves to an account or is purged.
import { sql } from 'kysely'
import type { Executor, Trx } from '../../../db/index.js'

export async function insertGuest(db: Executor, guest: { id: string; email: string; name: string; now: Date }): Promise<void> {
  await db
    .insertInto('user')
    .values({
      id: guest.id,
      email: guest.email,
      name: guest.name,
      email_verified: false,
      is_anonymous: true,
      created_at: guest.now,
      updated_at: guest.now,
    })
    .execute()
}

/** Locks the guest's row; false when it is no guest (any more): moved, purged, or never one. */
export async function lockGuest(trx: Trx, guestId: string): Promise<boolean> {
  const row = await trx
    .selectFrom('user')
    .select('id')
    .where('id', '=', guestId)
    .where('is_anonymous', '=', true)
    .forUpdate()
    .executeTakeFirst()
  return row !== undefined
}

/**
 * Moves what the guest made to the account, under the guest's lock: its journal entries,
 * compatibility results (and any deep insights of them), consents, and its usage, added to the
 * account's counters of the same periods (each act was counted once, by the guest: moved, it stays
 * counted once). Returns how many rows of each moved.
 */
export async function moveGuestData(trx: Trx, guestId: string, userId: string) {
  const moved = async (table: 'journal_entry' | 'compatibility_result' | 'deep_insights_purchase' | 'consent_record') =>
    Number(
      (await trx.updateTable(table).set({ user_id: userId }).where('user_id', '=', guestId).executeTakeFirst()).numUpdatedRows,
    )
  const entries = await moved('journal_entry')
  const results = await moved('compatibility_result')
  await moved('deep_insights_purchase')
  const consents = await moved('consent_record')
  const usage = await sql`
    insert into usage_counter (user_id, metric, period_start, used, updated_at)
    select ${userId}, metric, period_start, used, updated_at from usage_counter where user_id = ${guestId}
    on conflict (user_id, metric, period_start)
      do update set used = usage_counter.used + excluded.used, updated_at = greatest(usage_counter.updated_at, excluded.updated_at)`.execute(
    trx,
  )
  return { entries, results, consents, counters: Number(usage.numAffectedRows ?? 0) }
}

/** Deletes the guest (its sessions, devices and counters with it); its consents are deleted, not kept as an account's are. */
export async function deleteGuest(db: Executor, guestId: string): Promise<void> {
  await db.deleteFrom('consent_record').where('user_id', '=', guestId).execute()
  await db.deleteFrom('user').where('id', '=', guestId).where('is_anonymous', '=', true).execute()
}

/**
 * Up to `batchSize` guests nobody can reach any more, locked: no live session (the cookie is a
 * guest's only way in), none started or renewed since `untouchedSince`, and made before it. A guest
 * being moved to an account holds its lock and is skipped; once moved it is no guest.
 */
export async function lockUnreachableGuests(trx: Trx, now: Date, untouchedSince: Date, batchSize: number): Promise<string[]> {
  const rows = await trx
    .selectFrom('user as u')
    .select('u.id')
    .where('u.is_anonymous', '=', true)
    .where('u.created_at', '<', untouchedSince)
    .where(({ not, exists, selectFrom, or }) =>
      not(
        exists(
          selectFrom('session as s')
            .select(sql`1`.as('one'))
            .whereRef('s.user_id', '=', 'u.id')
            .where((eb) => or([eb('s.expires_at', '>', now), eb('s.updated_at', '>=', untouchedSince)])),
        ),
      ),
    )
    .orderBy('u.created_at')
    .limit(batchSize)
    .forUpdate()
    .skipLocked()
    .execute()
  return rows.map((r) => r.id)
}
