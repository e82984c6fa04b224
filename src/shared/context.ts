// Who is asking, from where: the one request context a service receives. Services never see a
// FastifyRequest or FastifyInstance; a route builds this once with contextOf(request).
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'

export interface RequestContext {
  /** The signed-in user, null for an anonymous caller (or the command line). */
  actorId: string | null
  ip: string | null
  userAgent: string | null
  log: FastifyBaseLogger
}

export function contextOf(request: FastifyRequest): RequestContext {
  return {
    actorId: request.user?.id ?? null,
    ip: request.ip,
    userAgent: request.headers['user-agent'] ?? null,
    log: request.log,
  }
}
