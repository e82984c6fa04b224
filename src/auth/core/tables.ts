// The tables of authentication: sessions, ways in (accounts), emailed links and second factors.
// The `user` row itself is the user's home's (src/user/tables.ts).
import type { ColumnType, Generated } from 'kysely'

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>
type CreatedAt = ColumnType<Date, Date | string | undefined, never>

export interface SessionTable {
  id: string
  token_hash: string
  user_id: string
  expires_at: Date
  remember_me: Generated<boolean>
  ip_address: string | null
  user_agent: string | null
  /** The session was started after a second factor (migration 0009). */
  two_factor_verified: Generated<boolean>
  /** When this session itself proved the account's address (migration 0018_session_address_proof; session/second-factor.ts). */
  email_proven_at: ColumnType<Date | null, Date | null | undefined, Date | null>
  /** The administrator who opened this session of the user, and from which session of theirs (migration 0021). */
  impersonated_by: string | null
  impersonator_session_id: string | null
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

/** A user's TOTP secret (encrypted) and its state (migration 0009). */
export interface TwoFactorTable {
  user_id: string
  secret: string
  verified: Generated<boolean>
  /** bigint: the driver returns it as a string. */
  last_step: ColumnType<string | null, number | null | undefined, number | null>
  failed_attempts: Generated<number>
  sign_in_failures: Generated<number>
  locked_until: Date | null
  created_at: CreatedAt
  updated_at: Timestamp
}

export interface TwoFactorBackupCodeTable {
  user_id: string
  code_hash: string
}

export interface AuthTables {
  session: SessionTable
  account: AccountTable
  verification: VerificationTable
  two_factor: TwoFactorTable
  two_factor_backup_code: TwoFactorBackupCodeTable
}
