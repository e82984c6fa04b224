// The wire shapes of accounts and sessions. Only zod and the lists of roles and plans: the admin
// operations' contract (src/contract/) reads the user's shape from here.
import { z } from 'zod'
import { ROLES } from '../../shared/roles.js'
import { PLANS } from '../../shared/plans.js'

/** A new password's length: better-auth's defaults. */
export const PASSWORD_MIN = 8
export const PASSWORD_MAX = 128

/** Printable ASCII only: no look-alike letter (the Kelvin sign lower-cases to "k") can name another address. */
const PLAIN_ASCII = /^[\x21-\x7e]+$/
const INVALID_EMAIL = 'Invalid email address'

/**
 * The one rule for an address, typed in a form or claimed by the identity provider: ASCII and
 * NFKC-stable (said twice on purpose: a future email regex that lets Unicode in must not open the
 * door), lower-cased, which on ASCII folds A-Z and nothing else.
 */
export const Email = z
  .string()
  .trim()
  .max(254)
  .refine((v) => PLAIN_ASCII.test(v) && v.normalize('NFKC') === v, { message: INVALID_EMAIL, abort: true })
  .pipe(z.email({ message: INVALID_EMAIL }))
  .transform((v) => v.toLowerCase())
// Any Unicode, never truncated: the whole string is hashed.
export const Password = z.string().min(PASSWORD_MIN).max(PASSWORD_MAX)
// A password as typed to be checked against the stored one (not the rules for a new one).
export const CurrentPassword = z.string().min(1).max(1024)
export const CallbackUrl = z.string().min(1).max(2048)
/** The token of an emailed link (links/verification.ts), as the link's route takes it back. */
export const EmailedToken = z.string().min(1).max(256)

export const UserSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    email: z.string(),
    emailVerified: z.boolean(),
    image: z.string().nullable(),
    role: z.enum(ROLES),
    plan: z.enum(PLANS),
    planExpiresAt: z.date().nullable(),
    twoFactorEnabled: z.boolean(),
    /** better-auth's anonymous plugin's field: a guest, until its browser signs up or signs in. */
    isAnonymous: z.boolean(),
    createdAt: z.date(),
    updatedAt: z.date(),
  })
  .meta({ id: 'User' })

export const SessionSchema = z
  .object({
    id: z.string().describe('Public session id; never the cookie token'),
    userId: z.string(),
    expiresAt: z.date(),
    createdAt: z.date(),
    updatedAt: z.date(),
    ipAddress: z.string().nullable(),
    userAgent: z.string().nullable(),
    impersonatedBy: z
      .string()
      .nullable()
      .describe("The administrator's user id when an administrator opened this session (impersonation), else null"),
  })
  .meta({ id: 'Session' })

/** What the routes that only act answer: better-auth's `{ status: true }`. */
export const Status = z.object({ status: z.literal(true) })

/** The body of a route that takes none: left out, or `{}`. */
export const NoBody = z.strictObject({}).optional()
/** The same, where null is taken too. */
export const NoBodyOrNull = z.strictObject({}).nullish()

export const WhoamiSchema = z.object({
  id: z.string(),
  email: z.string(),
  name: z.string(),
  role: z.enum(ROLES),
  plan: z.enum(PLANS),
  emailVerified: z.boolean(),
  sessionExpiresAt: z.date(),
})

export type UserJson = z.infer<typeof UserSchema>
export type SessionJson = z.infer<typeof SessionSchema>
type WhoamiJson = z.infer<typeof WhoamiSchema>

/** The user's own fields of a richer user object (the session's, an admin's view). */
export function toUserJson(u: UserJson): UserJson {
  return {
    id: u.id,
    name: u.name,
    email: u.email,
    emailVerified: u.emailVerified,
    image: u.image,
    role: u.role,
    plan: u.plan,
    planExpiresAt: u.planExpiresAt,
    twoFactorEnabled: u.twoFactorEnabled,
    isAnonymous: u.isAnonymous,
    createdAt: u.createdAt,
    updatedAt: u.updatedAt,
  }
}

export function toSessionJson(s: SessionJson): SessionJson {
  return {
    id: s.id,
    userId: s.userId,
    expiresAt: s.expiresAt,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    ipAddress: s.ipAddress,
    userAgent: s.userAgent,
    impersonatedBy: s.impersonatedBy,
  }
}

export function toWhoamiJson(u: Omit<WhoamiJson, 'sessionExpiresAt'>, s: { expiresAt: Date }): WhoamiJson {
  return {
    id: u.id,
    email: u.email,
    name: u.name,
    role: u.role,
    plan: u.plan,
    emailVerified: u.emailVerified,
    sessionExpiresAt: s.expiresAt,
  }
}

/** What a sign-in answers instead of the user when the second factor is awaited (better-auth's shape). */
export const TwoFactorRedirectSchema = z.object({
  twoFactorRedirect: z.literal(true),
  /** 'totp': verify-totp or verify-backup-code on the two_factor cookie; 'passkey': a passkey sign-in. */
  twoFactorMethods: z.array(z.enum(['totp', 'passkey'])),
})
/** A second factor, as better-auth's `twoFactorMethods` names it (session/second-factor.ts). */
export type SecondFactor = 'totp' | 'passkey'

export const twoFactorRedirect = (methods: SecondFactor[]) => ({ twoFactorRedirect: true as const, twoFactorMethods: methods })
