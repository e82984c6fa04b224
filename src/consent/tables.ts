import type { ColumnType } from 'kysely'

export const CONSENT_TYPES = ['terms', 'privacy', 'marketing', 'analytics', 'ai_processing'] as const
export type ConsentType = (typeof CONSENT_TYPES)[number]

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
}

export interface ConsentTables {
  consent_record: ConsentRecordTable
}
