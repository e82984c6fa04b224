// The browser a guest was made in (docs/http-contract.md, "Guests"). A session cookie proves which
// guest a request speaks for, not that the browser made it: whoever can write the browser's cookies
// (a sibling subdomain, a network attacker on plain http; the session cookie may even be shared
// with subdomains by AUTH_COOKIE_DOMAIN) can plant a session of their own guest there, and the
// account then signed in to would take what that guest holds. So sign-in/anonymous also sets this
// cookie, naming the guest, and a guest is adopted only by a browser that holds both. Over HTTPS it
// is `__Host-insight.guest` (hostCookieName), which neither of those writers can set.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import { hostCookieAttributes, hostCookieName, readSignedCookie } from '../session/cookie-attributes.js'

/** As long as a browser keeps a cookie: a stale one names a guest that is gone, and adopts nothing. */
const MAX_AGE_S = 400 * 24 * 60 * 60

export class GuestCookie {
  private readonly name: string

  constructor(private readonly config: Config['auth']) {
    this.name = hostCookieName(config, 'insight.guest')
  }

  private attributes() {
    return { ...hostCookieAttributes(this.config), signed: true }
  }

  /** The guest this browser was made for, when its signature verifies. */
  read(request: FastifyRequest): string | null {
    return readSignedCookie(request, this.name)
  }

  set(reply: FastifyReply, guestId: string): void {
    reply.setCookie(this.name, guestId, { ...this.attributes(), maxAge: MAX_AGE_S })
  }

  clear(reply: FastifyReply): void {
    reply.setCookie(this.name, '', { ...this.attributes(), signed: false, maxAge: 0, expires: new Date(0) })
  }
}
