// The signed-in user of a request. Who may call a route is declared in its policy and enforced by
// plugins/route-policy.ts before the handler runs; this is only how a handler reads the result.
import type { FastifyRequest } from 'fastify'
import { unauthorized } from '../shared/errors.js'
import type { SignedInUser } from './session/sessions.js'

/** The signed-in user of a route whose policy requires a session. */
export function currentUser(request: FastifyRequest): SignedInUser {
  if (!request.user) throw unauthorized()
  return request.user
}
