// The session of a request: looked up by the route-policy hook (plugins/route-policy.ts) through
// the loader below, before the route's access rule is checked, and read by handlers as request.user.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { SessionCookie } from './cookies.js'
import type { SessionManager, SignedInUser, ValidSession } from './sessions.js'

declare module 'fastify' {
  interface FastifyRequest {
    user: SignedInUser | null
    session: ValidSession['session'] | null
  }
}

/** Validates the request's session cookie; a forged, expired or revoked one is cleared, a sliding one renewed. */
export function sessionLoader(sessions: SessionManager, cookie: SessionCookie) {
  return async function loadSession(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!cookie.present(request)) return
    const value = cookie.tokenHashOf(request)
    const valid = value ? await sessions.validateHash(value.tokenHash) : null
    if (!valid) {
      cookie.clear(reply) // tell the browser to drop it
      return
    }
    request.user = valid.user
    request.session = valid.session
    if (valid.fresh) cookie.renew(reply, value!.signed, valid.session.expiresAt)
  }
}
