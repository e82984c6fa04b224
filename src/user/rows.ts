// The user row and the objects made of it, in one place: every column a domain reads is listed once
// (USER_FIELDS, with the name of its field), each view of the user is a list of those columns, and
// one mapper (fieldsOf) turns a row into that view. The session lookup's SQL is written from the
// same lists (auth/session/queries.ts), so a column is never spelled out twice.
import type { Selectable } from 'kysely'
import type { Profile, SessionUser, SignedInUser, UserWithFlags } from './types.js'
import type { UserTable } from './tables.js'

/** Every column of the user row that is read into an object, and the name of its field there. */
export const USER_FIELDS = {
  id: 'id',
  name: 'name',
  email: 'email',
  email_verified: 'emailVerified',
  image: 'image',
  role: 'role',
  plan: 'plan',
  plan_expires_at: 'planExpiresAt',
  two_factor_enabled: 'twoFactorEnabled',
  created_at: 'createdAt',
  updated_at: 'updatedAt',
  password_reset_required: 'passwordResetRequired',
  credential_epoch: 'credentialEpoch',
  ways_in_unproven: 'waysInUnproven',
  is_anonymous: 'isAnonymous',
  banned: 'banned',
  ban_reason: 'banReason',
  ban_expires: 'banExpiresAt',
  birth_date: 'birthDate',
  birth_time: 'birthTime',
  birth_place: 'birthPlace',
  gender: 'gender',
  locale: 'locale',
  timezone: 'timezone',
} as const satisfies { [C in keyof UserTable]?: string }

export type UserColumn = keyof typeof USER_FIELDS
export type UserRow = Selectable<UserTable>

/** The object made of the columns `C` of a user row: each under its field name. */
export type UserFields<C extends UserColumn> = { [K in C as (typeof USER_FIELDS)[K]]: UserRow[K] }

/** THE mapping of a user row to the user's fields: the columns `columns` of `row`, in that order. */
export function fieldsOf<C extends UserColumn>(row: Pick<UserRow, C>, columns: readonly C[]): UserFields<C> {
  const fields: Record<string, unknown> = {}
  for (const column of columns) fields[USER_FIELDS[column]] = row[column]
  return fields as UserFields<C>
}

/** The user as returned to its owner (SessionUser). */
export const sessionUserColumns = [
  'id',
  'name',
  'email',
  'email_verified',
  'image',
  'role',
  'plan',
  'plan_expires_at',
  'two_factor_enabled',
  'is_anonymous',
  'created_at',
  'updated_at',
] as const satisfies readonly UserColumn[]

/** The profile (Profile): the columns the profile domain writes, with the user's name and picture. */
const profileOnlyColumns = ['birth_date', 'birth_time', 'birth_place', 'gender', 'locale', 'timezone'] as const
export const profileColumns = [
  'id',
  'email',
  'name',
  'image',
  ...profileOnlyColumns,
  'created_at',
  'updated_at',
] as const satisfies readonly UserColumn[]

/** The user with the flags of sign-in (UserWithFlags). */
export const userColumns = [
  ...sessionUserColumns,
  'password_reset_required',
  'credential_epoch',
  'ways_in_unproven',
] as const satisfies readonly UserColumn[]

/** The suspension (Ban). */
export const banColumns = ['banned', 'ban_reason', 'ban_expires'] as const satisfies readonly UserColumn[]

/** What a session carries of its user (SignedInUser): the user, their profile and whether a ban holds. */
const signedInColumns = [...sessionUserColumns, 'banned', 'ban_expires'] as const satisfies readonly UserColumn[]

/** Every column the session lookup reads of the user, each once: it writes its SQL from this list. */
export const signedInUserColumns: readonly UserColumn[] = [...new Set<UserColumn>([...signedInColumns, ...profileColumns])]

export type SessionUserRow = Pick<UserRow, (typeof sessionUserColumns)[number]>
export type ProfileRow = Pick<UserRow, (typeof profileColumns)[number]>
export type UserWithFlagsRow = Pick<UserRow, (typeof userColumns)[number]>
export type SignedInUserRow = Pick<UserRow, (typeof signedInColumns)[number] | (typeof profileColumns)[number]>

export const toSessionUser = (row: SessionUserRow): SessionUser => fieldsOf(row, sessionUserColumns)
export const toProfile = (row: ProfileRow): Profile => fieldsOf(row, profileColumns)
export const toUserWithFlags = (row: UserWithFlagsRow): UserWithFlags => fieldsOf(row, userColumns)

export function toSignedInUser(row: SignedInUserRow): SignedInUser {
  const { banned, banExpiresAt, ...user } = fieldsOf(row, signedInColumns)
  return { ...user, profile: toProfile(row), banned, banExpiresAt }
}
