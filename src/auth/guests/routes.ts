// better-auth 1.6's anonymous plugin routes: POST /api/auth/sign-in/anonymous (a guest and its
// session) and POST /api/auth/delete-anonymous-user (the guest ends). A guest's data moves to an
// account in the sign-in that proves it (session/sign-in.ts, adopt.ts).
import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { contextOf } from '../../shared/context.js'
import { ErrorSchema } from '../../shared/errors.js'
import { type RoutePolicy, SESSION_OR_GUEST } from '../../shared/route-policy.js'
import { currentUser } from '../../user/signed-in.js'
import { toUserJson, UserSchema } from '../schemas.js'
import { signInDepsOf } from '../session/sign-in.js'
import { deleteGuestUser, signInAsGuest } from './service.js'

const tags = ['auth']
/** Public, on a per-IP budget of its own (RATE_LIMIT_GUEST_IP_PER_MINUTE): each call makes a user. */
const MAKES_A_GUEST: RoutePolicy = Object.freeze({ access: 'public', rateLimit: Object.freeze({ perIp: 'guest' as const }) })

export default async function guestRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()
  const signInDeps = signInDepsOf(app)

  app.post(
    '/api/auth/sign-in/anonymous',
    {
      config: { policy: MAKES_A_GUEST },
      schema: {
        operationId: 'signInAnonymous',
        tags,
        summary: 'Sign in as a guest: a user with isAnonymous true and a session, at once (400 for a guest already signed in)',
        body: z.strictObject({}).nullish(),
        response: { 200: z.object({ token: z.null(), user: UserSchema }), 400: ErrorSchema, 429: ErrorSchema },
      },
    },
    async (request, reply) => {
      const { user, outcome } = await signInAsGuest(
        signInDeps,
        contextOf(request),
        request.user,
        app.signInCookies.browserOf(request),
      )
      app.signInCookies.set(request, reply, outcome)
      return { token: null, user: toUserJson(user) }
    },
  )

  app.post(
    '/api/auth/delete-anonymous-user',
    {
      config: { policy: SESSION_OR_GUEST },
      schema: {
        operationId: 'deleteAnonymousUser',
        tags,
        summary: "Delete the current guest with what it made; 403 USER_IS_NOT_ANONYMOUS for an account's session",
        body: z.strictObject({}).nullish(),
        response: { 200: z.object({ success: z.literal(true) }), 401: ErrorSchema, 403: ErrorSchema },
      },
    },
    async (request, reply) => {
      await deleteGuestUser(app.db, contextOf(request), currentUser(request))
      app.sessionCookie.clear(reply)
      return { success: true as const }
    },
  )
}
