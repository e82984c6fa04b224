// What a route declares about who may call it and how (its `config.policy`); enforced for the route
// that matched by src/plugins/route-policy.ts. Every domain's routes use this vocabulary.
import type { ErrorCode } from './errors.js'
import type { Role } from './roles.js'

/** The named per-IP budgets a route may add to the global one (plugins/rate-limit.ts counts them). */
export type IpBudget = 'signIn' | 'signUp' | 'guest'
/**
 * The named per-email budgets, counted once the body is parsed: password attempts, attempts at a
 * mailed code, mail carrying a link, mail carrying a code (plugins/rate-limit.ts).
 */
export type EmailBudget = 'signIn' | 'code' | 'mail' | 'codeMail'

export interface RoutePolicy {
  /**
   * Who may call: anyone, any signed-in user (the default), or a signed-in user with one of the
   * roles; anyone else gets 403 FORBIDDEN, or the route's own `refusal` (better-auth's admin plugin
   * answers each of its routes with a code of its own).
   */
  access?: 'public' | 'session' | { roles: readonly Role[]; refusal?: { code: ErrorCode; message: string } }
  /**
   * `false` exempts the route from the origin rule. Only for public routes that authenticate the
   * caller otherwise (the payment gateways' signed webhooks).
   */
  checkOrigin?: false
  /**
   * Budgets on top of the global per-IP one; `global: false` only for health probes, metrics and
   * oRPC batch routes (each call a batch carries takes its own, plugins/batches.ts).
   */
  rateLimit?: { global?: false; perIp?: IpBudget; perEmail?: EmailBudget }
  /** The route checks the current password: attempts, right answers included, are limited per account. */
  reverifiesPassword?: true
  /** Responses may be stored by caches (the public API document); every other response is no-store. */
  cacheable?: true
  /**
   * The route acts even on GET (records an event or an audit row): a cross-site request must not
   * reach it, whatever its method, since the SameSite=Lax session cookie rides along on a top-level
   * navigation from any site (plugins/origins.ts, refuseCrossSite).
   */
  refusesCrossSite?: true
  /**
   * A guest (an anonymous user, src/auth/guests/) may call it. Every other route that needs a
   * session refuses a guest with 403: payments, two-factor, passkeys, admin, the account's ways in.
   */
  guests?: true
  /**
   * The route changes state even on GET (a link that verifies or deletes, a passkey registration's
   * options, a provider's callback): refused in support mode like a POST (plugins/route-policy.ts,
   * refuseWritesWhileImpersonating).
   */
  actsOnGet?: true
  /**
   * `'allowed'`: the route may be called in read-only support mode whatever its method: it ends the
   * impersonation itself (stop-impersonating, sign-out), or carries calls each judged on its own (a batch).
   * `'refused'`: a read that an impersonation may never make, IMPERSONATION_ALLOWS_WRITES or not: it
   * hands out something to take away, a copy of the member's whole data (the export) or a credential
   * that outlives the support session or acts outside it (a token, a new way in: `addsAWayIn`). The
   * agent sees what the member sees.
   */
  whileImpersonating?: 'allowed' | 'refused'
}

export const PUBLIC: RoutePolicy = Object.freeze({ access: 'public' })
/** Any signed-in user, a guest too (the session's own routes, the token). */
export const SESSION_OR_GUEST: RoutePolicy = Object.freeze({ guests: true as const })
/** A route that checks the current password (`reverifiesPassword`), signed in. */
export const REVERIFIES_PASSWORD: RoutePolicy = Object.freeze({ reverifiesPassword: true })
/**
 * A public route that signs in, or acts for someone signed out, with no address in the request (a
 * link's page, a passkey, a second factor): counted per IP like a sign-in.
 */
export const SIGN_IN_PER_IP: RoutePolicy = Object.freeze({ access: 'public', rateLimit: Object.freeze({ perIp: 'signIn' }) })
/** A public route that takes a password for an address: per IP, and per address split by client. */
export const SIGN_IN: RoutePolicy = Object.freeze({
  access: 'public',
  rateLimit: Object.freeze({ perIp: 'signIn', perEmail: 'signIn' }),
})
/**
 * A public route that takes a mailed code for an address: per IP, and per address and client, so
 * strangers' guesses never refuse the owner's code (each code dies after three wrong tries).
 */
export const SIGN_IN_WITH_CODE: RoutePolicy = Object.freeze({
  access: 'public',
  rateLimit: Object.freeze({ perIp: 'signIn', perEmail: 'code' }),
})
export const ADMIN: RoutePolicy = Object.freeze({ access: Object.freeze({ roles: Object.freeze(['admin', 'owner'] as const) }) })
/** An administrator's read that writes an audit row: no cross-site request reaches it. */
export const ADMIN_AUDITED_READ: RoutePolicy = Object.freeze({ ...ADMIN, refusesCrossSite: true as const })
/** A GET that changes state for a signed-in user (support mode refuses it like a POST). */
export const ACTS_ON_GET: RoutePolicy = Object.freeze({ actsOnGet: true as const })
/** A public GET that changes state: an emailed link's, a provider's callback (support mode refuses it). */
export const PUBLIC_ACTS_ON_GET: RoutePolicy = Object.freeze({ access: 'public' as const, actsOnGet: true as const })
/**
 * The user's whole data in one download: a read that records an event, so no cross-site request
 * reaches it, and never an impersonation's (support sees, never takes away).
 */
export const DATA_EXPORT: RoutePolicy = Object.freeze({ refusesCrossSite: true as const, whileImpersonating: 'refused' as const })

/**
 * `policy` on a route that adds a way into the account (a passkey, a provider login, a phone
 * number) or moves the address every emailed proof follows: never an impersonation's, writes
 * allowed or not. Its session was born minutes ago, so it passes for fresh (session/fresh.ts), yet
 * it proves nothing of the member: the agent would keep the account after stop-impersonating.
 */
export const addsAWayIn = (policy: RoutePolicy = {}): RoutePolicy =>
  Object.freeze({ ...policy, whileImpersonating: 'refused' as const })
