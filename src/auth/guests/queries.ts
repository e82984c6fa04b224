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
