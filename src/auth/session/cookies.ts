// The one place that sets and reads the session cookie (docs/http-contract.md, "Sessions and cookies").
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import type { Clock } from '../../shared/clock.js'

// better-auth's cookie name, so the web front end's middleware that looks for it keeps working.
const BASE_NAME = 'better-auth.session_token'

export class SessionCookie {
  readonly name: string

  constructor(
    private readonly config: Config['auth'],
    private readonly clock: Clock,
  ) {
    this.name = config.secureCookies ? `__Secure-${BASE_NAME}` : BASE_NAME
  }

  private attributes() {
    return {
      path: '/',
      httpOnly: true,
      sameSite: 'lax' as const,
      secure: this.config.secureCookies,
      domain: this.config.cookieDomain,
      signed: true,
    }
  }

  /** With rememberMe the cookie lives as long as the session; without, it ends with the browser. */
  set(reply: FastifyReply, token: string, options: { rememberMe: boolean; expiresAt: Date }): void {
    const maxAge = options.rememberMe
      ? Math.max(0, Math.floor((options.expiresAt.getTime() - this.clock.now().getTime()) / 1000))
      : undefined
    reply.setCookie(this.name, token, { ...this.attributes(), maxAge })
  }

  clear(reply: FastifyReply): void {
    reply.setCookie(this.name, '', { ...this.attributes(), signed: false, maxAge: 0, expires: new Date(0) })
  }

  /** The token when the cookie is present and its signature verifies under any configured key. */
  read(request: FastifyRequest): string | null {
    const raw = request.cookies[this.name]
    if (!raw) return null
    const result = request.unsignCookie(raw)
    return result.valid && result.value ? result.value : null
  }

  present(request: FastifyRequest): boolean {
    return Boolean(request.cookies[this.name])
  }
}
