import type { ColumnType } from 'kysely'

type Timestamp = ColumnType<Date, Date | undefined, Date>

/** A device (browser) an account has signed in from (migration 0014_security_notices). */
export interface KnownDeviceTable {
  user_id: string
  /** SHA-256 of the account's id and the device cookie's random id: never the cookie's value. */
  device_hash: string
  first_seen_at: Timestamp
  last_seen_at: Timestamp
}

export interface SecurityTables {
  known_device: KnownDeviceTable
}
