// better-auth 1.6's anonymous plugin routes: POST /api/auth/sign-in/anonymous (a guest and its
// session) and POST /api/auth/delete-anonymous-user (the guest ends). A guest's data moves to an
// account in the sign-in that proves it (sign-in/step.ts, sign-in/adopt-guest.ts).
import { z } from 'zod'
import { contextOf } from '../../shared/context.js'
import { type RoutePolicy, SESSION_OR_GUEST } from '../../shared/route-policy.js'
import { currentUser } from '../../user/signed-in.js'
import { NoBodyOrNull, toUserJson, UserSchema } from '../core/schemas.js'
import { deleteGuestUser, signInAsGuest } from '../guests/service.js'
import { signInDepsOf } from '../sign-in/step.js'
import { declareRoutes, serveRoutes } from './serve.js'

/** Public, on a per-IP budget of its own (RATE_LIMIT_GUEST_IP_PER_MINUTE): each call makes a user. */
const MAKES_A_GUEST: RoutePolicy = Object.freeze({ access: 'public', rateLimit: Object.freeze({ perIp: 'guest' as const }) })

export const guestRoutes = declareRoutes({
  signInAnonymous: {
    method: 'POST',
    path: '/api/auth/sign-in/anonymous',
    policy: MAKES_A_GUEST,
    summary: 'Sign in as a guest: a user with isAnonymous true and a session, at once (400 for a guest already signed in)',
    body: NoBodyOrNull,
    response: { 200: z.object({ token: z.null(), user: UserSchema }) },
    errors: [400, 429],
  },
  deleteAnonymousUser: {
    method: 'POST',
    path: '/api/auth/delete-anonymous-user',
    policy: SESSION_OR_GUEST,
    summary: "Delete the current guest with what it made; 403 USER_IS_NOT_ANONYMOUS for an account's session",
    body: NoBodyOrNull,
    response: { 200: z.object({ success: z.literal(true) }) },
    errors: [401, 403],
  },
})

export default serveRoutes(guestRoutes, (app) => {
  const signInDeps = signInDepsOf(app)
  return {
    signInAnonymous: async (request, reply) => {
      const browser = app.signInCookies.browserOf(request)
      const { user, outcome } = await signInAsGuest(signInDeps, contextOf(request), request.user, browser)
      app.signInCookies.set(request, reply, outcome)
      return { token: null, user: toUserJson(user) }
    },
    deleteAnonymousUser: async (request, reply) => {
      await deleteGuestUser(app.db, contextOf(request), currentUser(request))
      app.sessionCookie.clear(reply)
      return { success: true as const }
    },
  }
})
