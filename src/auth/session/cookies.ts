// The one place that sets and reads the session cookie (docs/http-contract.md, "Sessions and cookies").
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import type { Clock } from '../../shared/clock.js'
import { cookieAttributes, cookieName, cookiesOf, readSignedCookie } from './cookie-attributes.js'
import { hashToken } from '../core/tokens.js'

// better-auth's cookie name, so the web front end's middleware that looks for it keeps working.
const BASE_NAME = 'better-auth.session_token'

/** A cookie as the session loader needs it: the hash that finds the session, and the value as sent. */
export interface SessionCookieValue {
  tokenHash: string
  /** The signed value, to send back unchanged when the session is renewed. */
  signed: string
}

export class SessionCookie {
  readonly name: string
  /**
   * Signed values whose signature verified, by the SHA-256 of the value, to the token's hash. A
   * repeat request then costs one hash instead of an HMAC per configured key and a second hash.
   * Only values that verified ever get in, and the lookup key is a hash (the same kind of lookup as
   * the session cache's), never the secret itself. Bounded: the oldest entry goes first.
   */
  private readonly verified = new Map<string, string>()

  constructor(
    private readonly config: Config['auth'],
    private readonly clock: Clock,
    private readonly maxVerified = 100_000,
  ) {
    this.name = cookieName(config, BASE_NAME)
  }

  private attributes() {
    return { ...cookieAttributes(this.config), signed: true }
  }

  /** Seconds from the app clock's now until `expiresAt`. */
  private maxAgeUntil(expiresAt: Date): number {
    return Math.max(0, Math.floor((expiresAt.getTime() - this.clock.now().getTime()) / 1000))
  }

  /** With rememberMe the cookie lives as long as the session; without, it ends with the browser. */
  set(reply: FastifyReply, token: string, options: { rememberMe: boolean; expiresAt: Date }): void {
    const maxAge = options.rememberMe ? this.maxAgeUntil(options.expiresAt) : undefined
    reply.setCookie(this.name, token, { ...this.attributes(), maxAge })
  }

  clear(reply: FastifyReply): void {
    reply.setCookie(this.name, '', { ...this.attributes(), signed: false, maxAge: 0, expires: new Date(0) })
  }

  /** Sends back a value that verified (`tokenHashOf`) with a new expiry: renewal keeps the token. */
  renew(reply: FastifyReply, signed: string, expiresAt: Date): void {
    reply.setCookie(this.name, signed, { ...this.attributes(), signed: false, maxAge: this.maxAgeUntil(expiresAt) })
  }

  /**
   * The hash of the token when the cookie is present and its signature verifies under any configured
   * key; null for a cookie that does not verify, undefined for none.
   */
  tokenHashOf(request: FastifyRequest): SessionCookieValue | null | undefined {
    const signed = cookiesOf(request)[this.name]
    if (!signed) return undefined
    const key = hashToken(signed)
    let tokenHash = this.verified.get(key)
    if (tokenHash === undefined) {
      const result = request.unsignCookie(signed)
      if (!result.valid || !result.value) return null
      tokenHash = hashToken(result.value)
      if (this.verified.size >= this.maxVerified) this.verified.delete(this.verified.keys().next().value!)
      this.verified.set(key, tokenHash)
    }
    return { tokenHash, signed }
  }

  /** The token when the cookie is present and its signature verifies under any configured key. */
  read(request: FastifyRequest): string | null {
    return readSignedCookie(request, this.name)
  }

  present(request: FastifyRequest): boolean {
    return Boolean(cookiesOf(request)[this.name])
  }
}
