import type { ColumnType } from 'kysely'

export interface AuditEventTable {
  id: string
  at: ColumnType<Date, Date | string | undefined, never>
  actor_id: string | null
  action: string
  target_type: string | null
  target_id: string | null
  ip: string | null
  details: ColumnType<Record<string, unknown>, string | undefined, never>
}

export interface AdminTables {
  audit_event: AuditEventTable
}
