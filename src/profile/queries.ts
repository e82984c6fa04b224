import type { Kysely, Transaction, Updateable } from 'kysely'
import type { Database } from '../../db/schema.js'
import type { UserTable } from '../auth/tables.js'

type Db = Kysely<Database> | Transaction<Database>

const profileColumns = [
  'id', 'email', 'name', 'image', 'birth_date', 'birth_time', 'birth_place', 'gender', 'locale', 'timezone',
  'created_at', 'updated_at',
] as const

export type ProfileChanges = Pick<
  Updateable<UserTable>,
  'name' | 'image' | 'birth_date' | 'birth_time' | 'birth_place' | 'gender' | 'locale' | 'timezone' | 'updated_at'
>

export function findProfileRow(db: Db, userId: string) {
  return db.selectFrom('user').select(profileColumns).where('id', '=', userId).executeTakeFirst()
}

/** Writes the changes to the one user's row and returns the row as it now is. */
export function updateProfileRow(db: Db, userId: string, changes: ProfileChanges) {
  return db.updateTable('user').set(changes).where('id', '=', userId).returning(profileColumns).executeTakeFirst()
}

export type ProfileRow = NonNullable<Awaited<ReturnType<typeof findProfileRow>>>
