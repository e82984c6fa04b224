// Who is asking, from where: the one request context a service receives. Services never see a
// FastifyRequest or FastifyInstance; a route builds this once with contextOf(request).
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import { unauthorized } from './errors.js'

export interface RequestContext {
  /** The signed-in user, null for an anonymous caller (or the command line). */
  actorId: string | null
  /** The session the request came with, null without one. */
  sessionId: string | null
  ip: string | null
  userAgent: string | null
  log: FastifyBaseLogger
}

export function contextOf(request: FastifyRequest): RequestContext {
  return {
    actorId: request.user?.id ?? null,
    sessionId: request.session?.id ?? null,
    ip: request.ip,
    userAgent: request.headers['user-agent'] ?? null,
    log: request.log,
  }
}

/**
 * The signed-in user's id, for a service acting on the caller's own records. The route's policy
 * requires a session, so an anonymous caller never gets here; if one did, it is a 401.
 */
export function signedIn(ctx: RequestContext): string {
  if (ctx.actorId === null) throw unauthorized()
  return ctx.actorId
}
