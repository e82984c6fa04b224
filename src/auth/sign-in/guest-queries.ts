// A guest's rows as its adoption needs them (adopt-guest.ts): lock the guest, move what it made to
// the account, delete it. A guest is a `user` row with `is_anonymous` (migration 0020_guests); the
// guests' way in (src/auth/guests/) locks and deletes guests through these too.
import { sql } from 'kysely'
import type { Executor, Trx } from '../../../db/index.js'
import { lockUser } from '../../user/queries.js'

/**
 * Locks the guest's row (THE lock of a user's row: a guest is one); false when it is no guest (any
 * more): moved, purged, or never one.
 */
export async function lockGuest(trx: Trx, guestId: string): Promise<boolean> {
  return (await lockUser(trx, { id: guestId }, ['is_anonymous']))?.isAnonymous === true
}

/**
 * Moves what the guest made to the account, under the guest's lock: its journal entries,
 * compatibility results (and any deep insights of them), and its usage, added to the account's
 * counters of the same periods (each act was counted once, by the guest: moved, it stays counted
 * once). Never its consents: a guest's answers are not the account holder's, whose own stand; they
 * go with the guest (deleteGuest). Returns how many rows of each moved.
 */
export async function moveGuestData(trx: Trx, guestId: string, userId: string) {
  const moved = async (table: 'journal_entry' | 'compatibility_result' | 'deep_insights_purchase') =>
    Number(
      (await trx.updateTable(table).set({ user_id: userId }).where('user_id', '=', guestId).executeTakeFirst()).numUpdatedRows,
    )
  const entries = await moved('journal_entry')
  const results = await moved('compatibility_result')
  await moved('deep_insights_purchase')
  const usage = await sql`
    insert into usage_counter (user_id, metric, period_start, used, updated_at)
    select ${userId}, metric, period_start, used, updated_at from usage_counter where user_id = ${guestId}
    on conflict (user_id, metric, period_start)
      do update set used = usage_counter.used + excluded.used, updated_at = greatest(usage_counter.updated_at, excluded.updated_at)`.execute(
    trx,
  )
  return { entries, results, counters: Number(usage.numAffectedRows ?? 0) }
}

/** Deletes the guest (its sessions, devices and counters with it); its consents are deleted, not kept as an account's are. */
export async function deleteGuest(db: Executor, guestId: string): Promise<void> {
  await db.deleteFrom('consent_record').where('user_id', '=', guestId).execute()
  await db.deleteFrom('user').where('id', '=', guestId).where('is_anonymous', '=', true).execute()
}
