import type { ColumnType } from 'kysely'

export type Gender = 'male' | 'female' | 'other'

export interface BirthPlace {
  name: string
  latitude: number
  longitude: number
}

/**
 * The profile columns of the `user` table (migration 0002_profile). UserTable extends this, so
 * Kysely knows them while the profile domain keeps their definition.
 */
export interface ProfileColumns {
  /** 'YYYY-MM-DD': the driver returns date columns as strings. */
  birth_date: string | null
  /** 'HH:MM', 24-hour. */
  birth_time: string | null
  /** jsonb: written through json() from db/index.ts. */
  birth_place: ColumnType<BirthPlace | null, string | null | undefined, string | null>
  gender: Gender | null
  /** A canonical BCP-47 tag ('id', 'en-US'). */
  locale: string | null
  /** An IANA time zone ('Asia/Jakarta'). */
  timezone: string | null
}
