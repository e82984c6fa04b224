import type { ColumnType, Generated, Selectable } from 'kysely'
import type { ProfileColumns } from '../profile/tables.js'

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>
type CreatedAt = ColumnType<Date, Date | string | undefined, never>

export const ROLES = ['member', 'admin', 'owner'] as const
export type Role = (typeof ROLES)[number]
/** The one list of plans: schemas (z.enum(PLANS)), limits and analytics all read it from here. */
export const PLANS = ['free', 'premium', 'premium_plus'] as const
export type Plan = (typeof PLANS)[number]

export interface UserTable extends ProfileColumns {
  id: string
  name: string
  email: string
  email_verified: Generated<boolean>
  image: string | null
  role: Generated<Role>
  plan: Generated<Plan>
  plan_expires_at: Date | null
  password_reset_required: Generated<boolean>
  created_at: CreatedAt
  updated_at: Timestamp
}

export interface SessionTable {
  id: string
  token_hash: string
  user_id: string
  expires_at: Date
  remember_me: Generated<boolean>
  ip_address: string | null
  user_agent: string | null
  created_at: CreatedAt
  updated_at: Timestamp
}

export interface AccountTable {
  id: string
  user_id: string
  provider_id: string
  account_id: string
  password_hash: string | null
  created_at: CreatedAt
  updated_at: Timestamp
}

export interface VerificationTable {
  id: string
  purpose: string
  token_hash: string
  user_id: string | null
  data: ColumnType<Record<string, unknown>, string | undefined, string>
  expires_at: Date
  created_at: CreatedAt
}

export interface AuthTables {
  user: UserTable
  session: SessionTable
  account: AccountTable
  verification: VerificationTable
}

export type UserRow = Selectable<UserTable>
