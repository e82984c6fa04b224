import type { ColumnType } from 'kysely'

export interface UsageCounterTable {
  user_id: string
  metric: string
  period_start: Date
  used: number
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>
}

export interface UsageTables {
  usage_counter: UsageCounterTable
}
