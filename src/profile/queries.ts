import type { Updateable } from 'kysely'
import type { Executor } from '../../db/index.js'
import { profileColumns, toProfile } from '../user/rows.js'
import type { UserTable } from '../user/tables.js'
import type { Profile } from '../user/types.js'

export type ProfileChanges = Pick<
  Updateable<UserTable>,
  'name' | 'image' | 'birth_date' | 'birth_time' | 'birth_place' | 'gender' | 'locale' | 'timezone' | 'updated_at'
>

/** Writes the changes to the one user's row and returns the profile as it now is (undefined: no such user). */
export async function updateProfileRow(db: Executor, userId: string, changes: ProfileChanges): Promise<Profile | undefined> {
  const row = await db.updateTable('user').set(changes).where('id', '=', userId).returning(profileColumns).executeTakeFirst()
  return row && toProfile(row)
}
