import type { ColumnType, Selectable } from 'kysely'

type Json<T> = ColumnType<T, string | undefined, string>
type CreatedAt = ColumnType<Date, Date | string | undefined, never>
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>

import type { System } from './schemas.js'

export type { System }

export interface Partner {
  name: string
  birthDate: string
  birthTime?: string
  birthPlace?: { name: string; latitude: number; longitude: number }
}

export interface CompatibilityResultTable {
  id: string
  user_id: string
  partner: Json<Partner>
  systems: Json<System[]>
  score: number
  summary: Json<Record<string, unknown>>
  deep_insights: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>
  deep_insights_unlocked: ColumnType<boolean, boolean | undefined, boolean>
  /** Plain text, no foreign key: imported results refer to payments of the previous system. */
  payment_id: string | null
  /** timestamptz(3): millisecond precision, so a cursor round-trips exactly. */
  created_at: CreatedAt
  updated_at: Timestamp
}

type PurchaseStatus = 'active' | 'revoked'

export interface DeepInsightsPurchaseTable {
  id: string
  user_id: string
  result_id: string
  payment_id: string | null
  status: ColumnType<PurchaseStatus, PurchaseStatus | undefined, PurchaseStatus>
  created_at: CreatedAt
  revoked_at: Date | null
}

export interface CompatibilityTables {
  compatibility_result: CompatibilityResultTable
  deep_insights_purchase: DeepInsightsPurchaseTable
}

export type CompatibilityResultRow = Selectable<CompatibilityResultTable>
