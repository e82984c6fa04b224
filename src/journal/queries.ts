// SQL of the journal. Every write of a member names the owner, so an id never reaches another's row.
import { sql, type Insertable, type Updateable } from 'kysely'
import type { Executor } from '../../db/index.js'
import { newestFirst, type PageRequest } from '../shared/pagination.js'
import type { JournalEntryRow, JournalEntryTable } from './tables.js'
import { ownRow } from '../shared/own-row.js'

export async function insertEntry(db: Executor, values: Insertable<JournalEntryTable>): Promise<JournalEntryRow> {
  return db.insertInto('journal_entry').values(values).returningAll().executeTakeFirstOrThrow()
}

export async function findEntry(db: Executor, id: string): Promise<JournalEntryRow | undefined> {
  return db.selectFrom('journal_entry').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function updateOwnEntry(
  db: Executor,
  userId: string,
  id: string,
  values: Updateable<JournalEntryTable>,
): Promise<JournalEntryRow | undefined> {
  return db.updateTable('journal_entry').set(values).where(ownRow({ id, userId })).returningAll().executeTakeFirst()
}

export async function deleteOwnEntry(db: Executor, userId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('journal_entry').where(ownRow({ id, userId })).executeTakeFirst()
  return result.numDeletedRows > 0n
}

interface EntryFilter {
  from?: string
  to?: string
  mood?: number
}

/** Newest first by (created_at, id); the cursor only narrows, the user_id filter always applies. */
export async function listEntriesOf(
  db: Executor,
  userId: string,
  options: PageRequest & EntryFilter,
): Promise<JournalEntryRow[]> {
  let query = db.selectFrom('journal_entry').selectAll().where('user_id', '=', userId)
  if (options.from) query = query.where('entry_date', '>=', options.from)
  if (options.to) query = query.where('entry_date', '<=', options.to)
  if (options.mood !== undefined) query = query.where('mood', '=', options.mood)
  return newestFirst(query, options).execute()
}

/** The user's profile locale. The column belongs to the profile domain (migration 0002_profile). */
export async function findUserLocale(db: Executor, userId: string): Promise<string | null> {
  const row = await db
    .selectFrom('user')
    .select(sql<string | null>`locale`.as('locale'))
    .where('id', '=', userId)
    .executeTakeFirst()
  return row?.locale ?? null
}
