// The `user` table: the row every domain reads (src/user/rows.ts maps it), declared here, in the
// user's home, so that no domain has to import another to name it.
import type { ColumnType, Generated } from 'kysely'
import type { Plan } from '../shared/plans.js'
import type { Role } from '../shared/roles.js'

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>
type CreatedAt = ColumnType<Date, Date | string | undefined, never>

export type Gender = 'male' | 'female' | 'other'

export interface BirthPlace {
  name: string
  latitude: number
  longitude: number
}

/**
 * The profile columns of the `user` table (migration 0002_profile). They are defined here, with the
 * rest of the row, because the session lookup reads the whole row; the profile domain writes them.
 */
interface ProfileColumns {
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
  /** Suspension (migration 0010): while true and `ban_expires` is null or ahead, no session. */
  banned: Generated<boolean>
  ban_reason: string | null
  ban_expires: Date | null
  two_factor_enabled: Generated<boolean>
  /** Addresses before a change of email (migration 0011): erasure scrubs them from the audit log. */
  former_emails: Generated<string[]>
  /** Raised by whatever ends the user's sessions (migration 0013); a sign-in inserts its session only while unchanged. */
  credential_epoch: Generated<number>
  /** The address was proven by a link opened without the account's session (migration 0013). */
  ways_in_unproven: Generated<boolean>
  /** A guest (migration 0020_guests): made by sign-in/anonymous, no way in but its session (src/auth/guests/). */
  is_anonymous: Generated<boolean>
  /** A number in E.164, unique (migration 0022); it signs in only once verified (src/auth/phone/). */
  phone_number: string | null
  phone_number_verified: Generated<boolean>
  created_at: CreatedAt
  updated_at: Timestamp
}

export interface UserTables {
  user: UserTable
}
