import type { ColumnType } from 'kysely'

/** A passkey (migration 0015_passkey): a WebAuthn credential's public key, owned by one user. */
export interface PasskeyTable {
  id: string
  user_id: string
  name: string | null
  /** base64url. */
  credential_id: string
  /** base64 of the COSE public key. */
  public_key: string
  /** base64url of the WebAuthn user id the authenticator holds. */
  user_handle: string
  /** bigint: the driver returns it as a string. */
  counter: ColumnType<string, number, number>
  device_type: string
  backed_up: boolean
  /** Comma-separated, as better-auth stores them. */
  transports: string
  aaguid: string | null
  created_at: ColumnType<Date, Date | undefined, never>
  last_used_at: ColumnType<Date | null, Date | null | undefined, Date | null>
}

export interface PasskeyTables {
  passkey: PasskeyTable
}
