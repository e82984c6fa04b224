import type { Kysely, Transaction, Updateable } from 'kysely'
import type { Database } from '../../db/schema.js'
import type { UserTable } from '../auth/tables.js'
import type { Profile } from './service.js'
import type { Executor } from '../../db/index.js'


const profileColumns = [
  'id', 'email', 'name', 'image', 'birth_date', 'birth_time', 'birth_place', 'gender', 'locale', 'timezone',
  'created_at', 'updated_at',
] as const

export type ProfileChanges = Pick<
  Updateable<UserTable>,
  'name' | 'image' | 'birth_date' | 'birth_time' | 'birth_place' | 'gender' | 'locale' | 'timezone' | 'updated_at'
>

/** Writes the changes to the one user's row and returns the row as it now is. */
export function updateProfileRow(db: Executor, userId: string, changes: ProfileChanges) {
  return db.updateTable('user').set(changes).where('id', '=', userId).returning(profileColumns).executeTakeFirst()
}

export type ProfileRow = NonNullable<Awaited<ReturnType<typeof updateProfileRow>>>

/** The one mapping from a user row's profile columns to the profile. */
export function toProfile(r: ProfileRow): Profile {
  return {
    id: r.id,
    email: r.email,
    name: r.name,
    image: r.image,
    birthDate: r.birth_date,
    birthTime: r.birth_time,
    birthPlace: r.birth_place,
    gender: r.gender,
    locale: r.locale,
    timezone: r.timezone,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }
}
