import type { ColumnType } from 'kysely'

import type { ConsentType } from './schemas.js'

export type { ConsentType }

export interface ConsentRecordTable {
  id: string
  /** NULL once the account is deleted (the record is kept, anonymised). */
  user_id: string | null
  type: ConsentType
  version: string
  granted: boolean
  ip: string | null
  user_agent: string | null
  created_at: ColumnType<Date, Date | string | undefined, never>
  /** The order decisions were recorded in (migration 0016): breaks ties of `created_at`. */
  seq: ColumnType<number, never, never>
}

export interface ConsentTables {
  consent_record: ConsentRecordTable
}
