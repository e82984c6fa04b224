import type { ColumnType } from 'kysely'

type CreatedAt = ColumnType<Date, Date | string | undefined, never>
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>

export type ImportSection = 'user' | 'account' | 'journal_entry' | 'compatibility_result' | 'consent'

interface ImportRecordTable {
  section: ImportSection
  source_key: string
  source_digest: string | null
  written_digest: string | null
  created_at: CreatedAt
  updated_at: Timestamp
}

export interface ImportTables {
  import_record: ImportRecordTable
}
