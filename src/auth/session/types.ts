// A session as the queries read it and the session manager, the cache and the routes pass it on.

/** The session as shown to clients: `id` is the public id, never the token or its hash. */
export interface SessionView {
  id: string
  userId: string
  expiresAt: Date
  createdAt: Date
  updatedAt: Date
  ipAddress: string | null
  userAgent: string | null
  /** The administrator who opened this session of the user (impersonation), else null. */
  impersonatedBy: string | null
}

/** A session as the server knows it: `twoFactorVerified`, it was started after a second factor (REQUIRE_ADMIN_TWO_FACTOR). */
export interface SessionState extends SessionView {
  rememberMe: boolean
  twoFactorVerified: boolean
}

/**
 * How a sign-in proved who it is, as better-auth's last-login-method plugin names it: 'email'
 * (password), 'passkey', 'email-otp', 'magic-link', or the identity provider's id. The front end
 * reads it back from the `better-auth.last_used_login_method` cookie ("last time you used ...").
 */
export type LoginMethod = string
