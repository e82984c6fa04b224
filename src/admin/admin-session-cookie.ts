// better-auth's `admin_session` cookie: while an administrator impersonates a member, their own
// session cookie's value is kept aside here (signed as it was, with the session cookie's
// attributes), and stop-impersonating puts it back.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { cookieAttributes, cookieName, cookiesOf, readSignedCookie } from '../auth/session/cookie-attributes.js'
import type { Config } from '../config.js'

const BASE_NAME = 'better-auth.admin_session'

export class AdminSessionCookie {
  readonly name: string

  constructor(private readonly config: Config['auth']) {
    this.name = cookieName(config, BASE_NAME)
  }

  /** Keeps the session cookie's value as the request sent it (already signed) for `seconds`. */
  keep(request: FastifyRequest, reply: FastifyReply, sessionCookieName: string, seconds: number): void {
    const signed = cookiesOf(request)[sessionCookieName]
    if (signed) reply.setCookie(this.name, signed, { ...cookieAttributes(this.config), maxAge: seconds })
  }

  /** The kept session token, when the cookie is present and its signature verifies. */
  read(request: FastifyRequest): string | null {
    return readSignedCookie(request, this.name)
  }

  clear(reply: FastifyReply): void {
    reply.setCookie(this.name, '', { ...cookieAttributes(this.config), maxAge: 0, expires: new Date(0) })
  }
}
