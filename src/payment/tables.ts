import type { ColumnType, Selectable } from 'kysely'

type CreatedAt = ColumnType<Date, Date | string | undefined, never>
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>

import type { PaymentStatus, Provider } from './schemas.js'

export type { PaymentStatus, Provider }

interface PaymentTable {
  id: string
  /** Null once the account is deleted: payments are kept, anonymised. */
  user_id: string | null
  product: string
  /** Integer rupiah. */
  amount: number
  currency: ColumnType<string, string | undefined, string>
  status: ColumnType<PaymentStatus, PaymentStatus | undefined, PaymentStatus>
  provider: Provider
  /** The gateway's reference: Stripe's Checkout Session id, Midtrans' order id. */
  provider_ref: string | null
  result_id: string | null
  return_url: string
  granted_at: Date | null
  /** The plan expiry this payment's grant produced (migration 0012); null for other products or before. */
  granted_plan_expires_at: ColumnType<Date | null, Date | null | undefined, Date | null>
  /** The order grants happened in: numbered by a trigger when granted_at is set (migration 0017); null before. */
  grant_seq: ColumnType<number | null, never, never>
  /** timestamptz(3): millisecond precision, so a cursor round-trips exactly. */
  created_at: CreatedAt
  updated_at: Timestamp
  expires_at: Date
}

interface WebhookEventTable {
  id: string
  provider: Provider
  /** The gateway's event id (or a key built from the notification): unique per provider. */
  event_key: string
  event_type: string
  payment_id: string | null
  received_at: CreatedAt
}

export interface PaymentTables {
  payment: PaymentTable
  webhook_event: WebhookEventTable
}

export type PaymentRow = Selectable<PaymentTable>
