// The signed-in user of a request. Who may call a route is declared in its policy and enforced by
// plugins/route-policy.ts before the handler runs (the session hook of auth/session/ sets
// request.user); this is only how a handler reads the result, in the user's home so that every
// domain's routes read it without importing auth.
import type { FastifyRequest } from 'fastify'
import { unauthorized } from '../shared/errors.js'
import type { Viewer } from '../shared/moderation.js'
import type { SignedInUser } from './types.js'

/** The signed-in user of a route whose policy requires a session. */
export function currentUser(request: FastifyRequest): SignedInUser {
  if (!request.user) throw unauthorized()
  return request.user
}

/**
 * The reader of a route that lets admins and owners read other users' records (shared/moderation.ts).
 * With REQUIRE_ADMIN_TWO_FACTOR, a session that did not pass a second factor reads as a member, as
 * the admin routes refuse it: a password alone must not open other users' records either.
 */
export function viewerOf(request: FastifyRequest): Viewer {
  const user = currentUser(request)
  const moderator = user.role === 'admin' || user.role === 'owner'
  if (moderator && request.server.config.auth.requireAdminTwoFactor && !request.session?.twoFactorVerified)
    return { id: user.id, role: 'member' }
  return user
}
