// The tokens the AI backend (and any other service) verifies without calling us: EdDSA JWTs in
// better-auth's jwt plugin's shape, `sub` the user id, and what a service needs to enforce a plan
// (`role`, `plan`, `planExpiresAt`). No email, name or other personal data unless configured
// (JWT_INCLUDE_EMAIL). A token is issued only for a session the route policy validated, on every
// request anew (revocation-aware, docs/architecture.md "Sessions"), so an ended session gets none;
// one already issued lives JWT_TTL_SECONDS (15 minutes at most) — docs/tokens.md.
import { SignJWT } from 'jose'
import type { Config } from '../../config.js'
import type { Clock } from '../../shared/clock.js'
import { andThen, type MaybePromise } from '../../shared/maybe-async.js'
import { effectivePlan } from '../../usage/plans.js'
import type { SignedInUser } from '../../user/types.js'
import type { SessionState } from '../session/types.js'
import { ALG, type Signer, type SigningKeys } from './keys.js'

/** The header get-session sends the token in (better-auth's jwt plugin). */
export const TOKEN_HEADER = 'set-auth-jwt'

/** A token issued this recently for the same session, user row and key is handed out again (get-session is called often). */
const REUSE_MS = 30_000

/**
 * RFC 8693's actor claim: the administrator acting in this session when it is an impersonation.
 * THE hook for impersonation: the session's impersonator id (the `impersonated_by` column of an
 * impersonation session) goes in here; null for a session of the user's own.
 */
export function actorClaim(impersonatedBy: string | null | undefined): { act?: { sub: string } } {
  return impersonatedBy ? { act: { sub: impersonatedBy } } : {}
}

/**
 * The session as the token needs it: its public id, its end (no token outlives it: an impersonation's
 * hour is the token's bound too) and, for an impersonation, the administrator.
 */
export interface TokenSession {
  id: SessionState['id']
  expiresAt?: Date
  impersonatedBy?: string | null
}

/** The session's end in seconds (rounded down: a token never outlives it), or `fallback` when unknown. */
const endOf = (session: TokenSession, fallback: number) =>
  session.expiresAt ? Math.floor(session.expiresAt.getTime() / 1000) : fallback

export class TokenIssuer {
  private readonly issued = new WeakMap<SignedInUser, { sessionId: string; kid: string; at: number; token: string }>()

  constructor(
    private readonly keys: SigningKeys,
    private readonly clock: Clock,
    private readonly config: Config['jwt'],
  ) {}

  /**
   * A token for the user of a validated session. Kept with the user object the session cache hands
   * out (replaced, never edited, when the row changes) for REUSE_MS, so a page that polls
   * get-session does not cost a signature per call and a changed plan is in the next token.
   */
  issue(user: SignedInUser, session: TokenSession): MaybePromise<string> {
    const now = this.clock.now().getTime()
    const kept = this.issued.get(user)
    return andThen(this.keys.current(), (signer) => {
      if (kept && kept.sessionId === session.id && kept.kid === signer.kid && now - kept.at < REUSE_MS && now >= kept.at) {
        return kept.token
      }
      return this.sign(signer, user, session, now).then((token) => {
        this.issued.set(user, { sessionId: session.id, kid: signer.kid, at: now, token })
        return token
      })
    })
  }

  private sign(signer: Signer, user: SignedInUser, session: TokenSession, nowMs: number): Promise<string> {
    const now = Math.floor(nowMs / 1000)
    const planExpiresAt = user.planExpiresAt ? Math.floor(user.planExpiresAt.getTime() / 1000) : null
    const claims = {
      role: user.role,
      // What the plan is now; `planExpiresAt` (seconds, as `exp`) says when a paid one lapses.
      plan: effectivePlan(user, new Date(nowMs)),
      planExpiresAt,
      // A guest (src/auth/guests/): the AI backend may hold it to less than a member.
      isAnonymous: user.isAnonymous,
      ...(this.config.includeEmail ? { email: user.email, email_verified: user.emailVerified } : {}),
      ...actorClaim(session.impersonatedBy),
    }
    return new SignJWT(claims)
      .setProtectedHeader({ alg: ALG, kid: signer.kid, typ: 'JWT' })
      .setSubject(user.id)
      .setIssuer(this.config.issuer)
      .setAudience(this.config.audience)
      .setIssuedAt(now)
      .setExpirationTime(Math.min(now + this.config.ttlSeconds, endOf(session, now + this.config.ttlSeconds)))
      .sign(signer.key)
  }
}
