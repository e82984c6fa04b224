import type { ColumnType, Selectable } from 'kysely'

type Json<T> = ColumnType<T, string | undefined, string>
type CreatedAt = ColumnType<Date, Date | string | undefined, never>
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>

export interface JournalEntryTable {
  id: string
  user_id: string
  content: string
  mood: number
  mood_label: string | null
  /** jsonb array of strings: written through json() from db/index.ts. */
  tags: Json<string[]>
  /** 'YYYY-MM-DD': the driver returns date columns as strings. */
  entry_date: string
  prompt_id: string | null
  /** timestamptz(3): millisecond precision, so a cursor round-trips exactly. */
  created_at: CreatedAt
  updated_at: Timestamp
}

export interface JournalTables {
  journal_entry: JournalEntryTable
}

export type JournalEntryRow = Selectable<JournalEntryTable>
