// Session validation on every request, and the pre-handlers that routes use to demand a session
// or a role. Roles are checked by plain string comparison (spec §5.3); there is no ACL.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { forbidden, unauthorized } from '../errors.js'
import type { SessionCookie } from './cookies.js'
import type { SessionManager, SignedInUser, ValidSession } from './sessions.js'
import type { Role } from './tables.js'

declare module 'fastify' {
  interface FastifyRequest {
    user: SignedInUser | null
    session: ValidSession['session'] | null
  }
}

export default fp(
  async function sessionValidation(app: FastifyInstance, opts: { sessions: SessionManager; cookie: SessionCookie }) {
    const { sessions, cookie } = opts
    app.decorateRequest('user', null)
    app.decorateRequest('session', null)

    app.addHook('onRequest', async (request, reply) => {
      if (!cookie.present(request)) return
      const token = cookie.read(request)
      const valid = token ? await sessions.validate(token) : null
      if (!valid) {
        cookie.clear(reply) // forged, expired or revoked: tell the browser to drop it
        return
      }
      request.user = valid.user
      request.session = valid.session
      if (valid.fresh) cookie.set(reply, token!, { rememberMe: true, expiresAt: valid.session.expiresAt })
    })
  },
  { name: 'session-validation', dependencies: ['@fastify/cookie'] },
)

/**
 * Use as an onRequest hook: an anonymous caller is refused with 401 before its body is parsed or
 * validated, so it learns nothing about the route's schema.
 */
export async function requireSession(request: FastifyRequest): Promise<void> {
  if (!request.user) throw unauthorized()
}

export function requireRole(...roles: Role[]) {
  return async function roleGuard(request: FastifyRequest): Promise<void> {
    if (!request.user) throw unauthorized()
    if (!roles.includes(request.user.role)) throw forbidden(`${roles.join(' or ')} role required`)
  }
}

/** The signed-in user of a route behind `requireSession`. */
export function currentUser(request: FastifyRequest): SignedInUser {
  if (!request.user) throw unauthorized()
  return request.user
}
