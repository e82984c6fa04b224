// The two cookies of two-factor authentication, in better-auth's names: the sign-in challenge
// (`better-auth.two_factor`, 10 minutes) and the trusted device (`better-auth.trust_device`, 30
// days). Both HttpOnly and signed with AUTH_SECRET; each carries a random token whose SHA-256 is a
// `verification` row, so the server decides what it is worth and can revoke it.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import { cookieAttributes, cookieName, cookiesOf, readSignedCookie } from '../session/cookie-attributes.js'

export const CHALLENGE_TTL_MS = 10 * 60 * 1000
export const TRUSTED_DEVICE_TTL_MS = 30 * 24 * 60 * 60 * 1000

/** An HttpOnly cookie signed with AUTH_SECRET, carrying a random token whose SHA-256 is a `verification` row. */
export class SignedCookie {
  readonly name: string

  constructor(
    private readonly config: Config['auth'],
    baseName: string,
    private readonly maxAgeMs: number,
  ) {
    this.name = cookieName(config, baseName)
  }

  private attributes() {
    return cookieAttributes(this.config)
  }

  set(reply: FastifyReply, token: string): void {
    reply.setCookie(this.name, token, { ...this.attributes(), signed: true, maxAge: this.maxAgeMs / 1000 })
  }

  clear(reply: FastifyReply): void {
    reply.setCookie(this.name, '', { ...this.attributes(), maxAge: 0, expires: new Date(0) })
  }

  present(request: FastifyRequest): boolean {
    return Boolean(cookiesOf(request)[this.name])
  }

  /** The token when the cookie is present and its signature verifies under any configured key. */
  read(request: FastifyRequest): string | null {
    return readSignedCookie(request, this.name)
  }
}

export class TwoFactorCookies {
  readonly challenge: SignedCookie
  readonly trustedDevice: SignedCookie

  constructor(config: Config['auth']) {
    this.challenge = new SignedCookie(config, 'better-auth.two_factor', CHALLENGE_TTL_MS)
    this.trustedDevice = new SignedCookie(config, 'better-auth.trust_device', TRUSTED_DEVICE_TTL_MS)
  }
}
