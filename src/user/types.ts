// The user as every domain knows it. These types are the user's home's (src/user/): a domain that
// needs the user imports them from here, never from another domain.
import type { Plan } from '../shared/plans.js'
import type { Role } from '../shared/roles.js'
import type { BirthPlace, Gender } from './tables.js'

/** The user as returned to its owner (docs/http-contract.md, "Accounts and sessions"). */
export interface SessionUser {
  id: string
  name: string
  email: string
  emailVerified: boolean
  image: string | null
  role: Role
  plan: Plan
  planExpiresAt: Date | null
  twoFactorEnabled: boolean
  /** A guest (better-auth's anonymous plugin): no address proven, no password; src/auth/guests/. */
  isAnonymous: boolean
  createdAt: Date
  updatedAt: Date
}

/** The profile part of the user: read with every session, written by the profile domain. */
export interface Profile {
  id: string
  email: string
  name: string
  image: string | null
  birthDate: string | null
  birthTime: string | null
  birthPlace: BirthPlace | null
  gender: Gender | null
  locale: string | null
  timezone: string | null
  createdAt: Date
  updatedAt: Date
}

/**
 * The user of a valid session, with their profile: the session lookup reads the whole user row in
 * its one query, so routes such as getProfile need no query of their own.
 */
export interface SignedInUser extends SessionUser {
  profile: Profile
  /** The suspension (src/auth/core/ban.ts): a session of a user whose ban holds is refused. */
  banned: boolean
  banExpiresAt: Date | null
}

/** The user with the flags that sign-in and the take-back read. */
export interface UserWithFlags extends SessionUser {
  passwordResetRequired: boolean
  /** Read with the credential a sign-in checks: its session is born only while this is unchanged (auth/session/sessions.ts). */
  credentialEpoch: number
  /** The address was proven without the account's session: the next take-back removes its ways in (auth/account/take-back.ts). */
  waysInUnproven: boolean
}

/** A suspension, as better-auth's admin plugin names its fields. */
export interface Ban {
  banned: boolean
  banReason: string | null
  banExpiresAt: Date | null
}
