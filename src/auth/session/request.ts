// The session of a request: looked up by the route-policy hook (plugins/route-policy.ts) through
// the loader below, before the route's access rule is checked, and read by handlers as request.user.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { andThen, type MaybePromise } from '../../shared/maybe-async.js'
import type { SessionCookie } from './cookies.js'
import type { SignedInUser } from '../../user/types.js'
import type { SessionManager } from './sessions.js'
import type { SessionState } from './types.js'

declare module 'fastify' {
  interface FastifyRequest {
    user: SignedInUser | null
    session: SessionState | null
  }
}

/**
 * Validates the request's session cookie; a forged, expired or revoked one is cleared, a sliding one
 * renewed. A session answered from memory is set before it returns, without a promise.
 */
export function sessionLoader(sessions: SessionManager, cookie: SessionCookie) {
  return function loadSession(request: FastifyRequest, reply: FastifyReply): MaybePromise<void> {
    const value = cookie.tokenHashOf(request)
    if (value === undefined) return // no cookie
    return andThen(value ? sessions.validateHash(value.tokenHash) : null, (valid) => {
      if (!valid) {
        cookie.clear(reply) // tell the browser to drop it
        return
      }
      request.user = valid.user
      request.session = valid.session
      if (valid.fresh) cookie.renew(reply, value!.signed, valid.session.expiresAt)
    })
  }
}
