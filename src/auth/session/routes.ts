// The current session: read it, end it, list and revoke the user's sessions, and whoami. Under
// /api/auth/* with better-auth 1.6's names and JSON shapes, so its client keeps working.
import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { PUBLIC, SESSION_OR_GUEST } from '../../shared/route-policy.js'
import { contextOf } from '../../shared/context.js'
import { currentUser } from '../../user/signed-in.js'
import { SessionSchema, Status, toSessionJson, toUserJson, toWhoamiJson, UserSchema, WhoamiSchema } from '../schemas.js'
import { ErrorSchema } from '../../shared/errors.js'
import { JsonMemo } from '../../shared/json-memo.js'
import type { SignedInUser } from '../../user/types.js'
import { TOKEN_HEADER } from '../tokens/routes.js'
import { revokeAllSessions, revokeOtherSessions, revokeSession } from './service.js'

const tags = ['auth']

const GetSessionSchema = z.object({ session: SessionSchema, user: UserSchema }).nullable()
const getSessionJson = new JsonMemo<SignedInUser>(GetSessionSchema, 'GET', '/api/auth/get-session')

export default async function sessionRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()
  const deps = { db: app.db, sessions: app.sessions }

  app.get(
    '/api/auth/get-session',
    {
      config: { policy: PUBLIC },
      schema: {
        operationId: 'getSession',
        tags,
        summary: 'The current session and user, or null',
        response: { 200: GetSessionSchema },
      },
    },
    // Answered from memory (the session the route policy loaded, a token issued moments ago): a plain function.
    (request, reply) => {
      const { user, session } = request
      if (!user || !session) {
        reply.send(null)
        return
      }
      // better-auth's jwt plugin: the session's token for other services, in a header (CORS exposes it).
      const send = (token: string) => {
        reply.header(TOKEN_HEADER, token)
        // Kept with the cached user object; the expiry is the one part a renewal changes.
        getSessionJson.send(reply, user, session.expiresAt.getTime(), () => ({
          session: toSessionJson(session),
          user: toUserJson(user),
        }))
      }
      const token = app.tokens.issue(user, session)
      if (token instanceof Promise) return token.then(send)
      send(token)
    },
  )

  app.post(
    '/api/auth/sign-out',
    {
      // In support mode too: it ends only the session it is called with, the impersonation.
      config: { policy: { ...PUBLIC, whileImpersonating: 'allowed' } },
      schema: {
        operationId: 'signOut',
        tags,
        summary: 'End the current session (succeeds also without one)',
        body: z.strictObject({}).nullish(),
        response: { 200: z.object({ success: z.literal(true) }) },
      },
    },
    async (request, reply) => {
      const token = app.sessionCookie.read(request)
      if (token) await app.sessions.revokeByToken(token)
      app.sessionCookie.clear(reply)
      return { success: true as const }
    },
  )

  app.get(
    '/api/auth/list-sessions',
    {
      config: { policy: SESSION_OR_GUEST },
      schema: {
        operationId: 'listSessions',
        tags,
        summary: 'The active sessions of the current user, newest first',
        response: { 200: z.array(SessionSchema.extend({ current: z.boolean() })), 401: ErrorSchema },
      },
    },
    async (request) => {
      const sessions = await app.sessions.list(currentUser(request).id)
      return sessions.map((s) => ({ ...toSessionJson(s), current: s.id === request.session!.id }))
    },
  )

  app.post(
    '/api/auth/revoke-session',
    {
      config: { policy: SESSION_OR_GUEST },
      schema: {
        operationId: 'revokeSession',
        tags,
        summary: "End one session of the current user by its public id (404 for an unknown id or another user's)",
        body: z.strictObject({ id: z.string().min(1).max(64) }),
        response: { 200: Status, 401: ErrorSchema, 404: ErrorSchema },
      },
    },
    async (request, reply) => {
      await revokeSession(deps, contextOf(request), currentUser(request).id, request.body.id)
      if (request.body.id === request.session!.id) app.sessionCookie.clear(reply)
      return { status: true as const }
    },
  )

  app.post(
    '/api/auth/revoke-other-sessions',
    {
      config: { policy: SESSION_OR_GUEST },
      schema: {
        operationId: 'revokeOtherSessions',
        tags,
        summary: 'End every session of the current user but this one',
        body: z.strictObject({}).optional(),
        response: { 200: Status, 401: ErrorSchema },
      },
    },
    async (request) => {
      await revokeOtherSessions(deps, contextOf(request), currentUser(request).id, request.session!.id)
      return { status: true as const }
    },
  )

  app.post(
    '/api/auth/revoke-sessions',
    {
      config: { policy: SESSION_OR_GUEST },
      schema: {
        operationId: 'revokeSessions',
        tags,
        summary: 'End every session of the current user, this one included',
        body: z.strictObject({}).optional(),
        response: { 200: Status, 401: ErrorSchema },
      },
    },
    async (request, reply) => {
      await revokeAllSessions(deps, contextOf(request), currentUser(request).id)
      app.sessionCookie.clear(reply)
      return { status: true as const }
    },
  )

  app.get(
    '/api/v1/whoami',
    {
      config: { policy: SESSION_OR_GUEST },
      schema: {
        operationId: 'whoami',
        tags: ['identity'],
        summary: 'Who the current session belongs to',
        response: { 200: WhoamiSchema, 401: ErrorSchema },
      },
    },
    async (request) => toWhoamiJson(currentUser(request), request.session!),
  )
}
