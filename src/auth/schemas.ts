import { z } from 'zod'
import { iso } from '../shared/dates.js'
import { PASSWORD_MAX, PASSWORD_MIN } from './password/password.js'
import type { SessionUser, SessionView } from './session/sessions.js'
import { PLANS } from './tables.js'
import { ROLES } from '../shared/roles.js'

export const Email = z
  .string()
  .trim()
  .max(254)
  .pipe(z.email({ message: 'Invalid email address' }))
  .transform((v) => v.toLowerCase())
// Any Unicode, never truncated: the whole string is hashed.
export const Password = z.string().min(PASSWORD_MIN).max(PASSWORD_MAX)
// A password as typed to be checked against the stored one (not the rules for a new one).
export const CurrentPassword = z.string().min(1).max(1024)
export const CallbackUrl = z.string().min(1).max(2048)
/** The token of an emailed link (verification.ts), as the link's route takes it back. */
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
    planExpiresAt: z.string().nullable(),
    twoFactorEnabled: z.boolean(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'User' })

export const SessionSchema = z
  .object({
    id: z.string().describe('Public session id; never the cookie token'),
    userId: z.string(),
    expiresAt: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
    ipAddress: z.string().nullable(),
    userAgent: z.string().nullable(),
  })
  .meta({ id: 'Session' })

/** What the routes that only act answer: better-auth's `{ status: true }`. */
export const Status = z.object({ status: z.literal(true) })

export const WhoamiSchema = z.object({
  id: z.string(),
  email: z.string(),
  name: z.string(),
  role: z.enum(ROLES),
  plan: z.enum(PLANS),
  emailVerified: z.boolean(),
  sessionExpiresAt: z.string(),
})

export type UserJson = z.infer<typeof UserSchema>
export type SessionJson = z.infer<typeof SessionSchema>
type WhoamiJson = z.infer<typeof WhoamiSchema>

export function toUserJson(u: SessionUser): UserJson {
  return {
    id: u.id,
    name: u.name,
    email: u.email,
    emailVerified: u.emailVerified,
    image: u.image,
    role: u.role,
    plan: u.plan,
    planExpiresAt: iso(u.planExpiresAt),
    twoFactorEnabled: u.twoFactorEnabled,
    createdAt: u.createdAt.toISOString(),
    updatedAt: u.updatedAt.toISOString(),
  }
}

export function toSessionJson(s: SessionView): SessionJson {
  return {
    id: s.id,
    userId: s.userId,
    expiresAt: s.expiresAt.toISOString(),
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
    ipAddress: s.ipAddress,
    userAgent: s.userAgent,
  }
}

export function toWhoamiJson(u: SessionUser, s: Pick<SessionView, 'expiresAt'>): WhoamiJson {
  return {
    id: u.id,
    email: u.email,
    name: u.name,
    role: u.role,
    plan: u.plan,
    emailVerified: u.emailVerified,
    sessionExpiresAt: s.expiresAt.toISOString(),
  }
}
