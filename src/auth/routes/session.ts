// The current session: read it, end it, list and revoke the user's sessions, and whoami. Under
// /api/auth/* with better-auth 1.6's names and JSON shapes, so its client keeps working.
import { z } from 'zod'
import { contextOf } from '../../shared/context.js'
import { JsonMemo } from '../../shared/json-memo.js'
import { PUBLIC, SESSION_OR_GUEST } from '../../shared/route-policy.js'
import { currentUser } from '../../user/signed-in.js'
import type { SignedInUser } from '../../user/types.js'
import {
  NoBody,
  NoBodyOrNull,
  SessionSchema,
  Status,
  toSessionJson,
  toUserJson,
  toWhoamiJson,
  UserSchema,
  WhoamiSchema,
} from '../core/schemas.js'
import { revokeAllSessions, revokeOtherSessions, revokeSession } from '../session/service.js'
import { TOKEN_HEADER } from '../tokens/issuer.js'
import { declareRoutes, serveRoutes } from './serve.js'

const GetSessionSchema = z.object({ session: SessionSchema, user: UserSchema }).nullable()
const getSessionJson = new JsonMemo<SignedInUser>(GetSessionSchema, 'GET', '/api/auth/get-session')

export const sessionRoutes = declareRoutes({
  getSession: {
    method: 'GET',
    path: '/api/auth/get-session',
    policy: PUBLIC,
    summary: 'The current session and user, or null',
    response: { 200: GetSessionSchema },
  },
  signOut: {
    method: 'POST',
    path: '/api/auth/sign-out',
    // In support mode too: it ends only the session it is called with, the impersonation.
    policy: { ...PUBLIC, whileImpersonating: 'allowed' },
    summary: 'End the current session (succeeds also without one)',
    body: NoBodyOrNull,
    response: { 200: z.object({ success: z.literal(true) }) },
  },
  listSessions: {
    method: 'GET',
    path: '/api/auth/list-sessions',
    policy: SESSION_OR_GUEST,
    summary: 'The active sessions of the current user, newest first',
    response: { 200: z.array(SessionSchema.extend({ current: z.boolean() })) },
    errors: [401],
  },
  revokeSession: {
    method: 'POST',
    path: '/api/auth/revoke-session',
    policy: SESSION_OR_GUEST,
    summary: "End one session of the current user by its public id (404 for an unknown id or another user's)",
    body: z.strictObject({ id: z.string().min(1).max(64) }),
    response: { 200: Status },
    errors: [401, 404],
  },
  revokeOtherSessions: {
    method: 'POST',
    path: '/api/auth/revoke-other-sessions',
    policy: SESSION_OR_GUEST,
    summary: 'End every session of the current user but this one',
    body: NoBody,
    response: { 200: Status },
    errors: [401],
  },
  revokeSessions: {
    method: 'POST',
    path: '/api/auth/revoke-sessions',
    policy: SESSION_OR_GUEST,
    summary: 'End every session of the current user, this one included',
    body: NoBody,
    response: { 200: Status },
    errors: [401],
  },
  whoami: {
    method: 'GET',
    path: '/api/v1/whoami',
    policy: SESSION_OR_GUEST,
    tags: ['identity'],
    summary: 'Who the current session belongs to',
    response: { 200: WhoamiSchema },
    errors: [401],
  },
})

export default serveRoutes(sessionRoutes, (app) => {
  const deps = { db: app.db, sessions: app.sessions }
  return {
    // Answered from memory (the session the route policy loaded, a token issued moments ago): a plain function.
    getSession: (request, reply) => {
      const { user, session } = request
      if (!user || !session) {
        reply.send(null)
        return undefined
      }
      // better-auth's jwt plugin: the session's token for other services, in a header (CORS exposes
      // it); none for an impersonation, as the token route refuses it (support takes no credential away).
      const send = (token: string | null) => {
        if (token !== null) reply.header(TOKEN_HEADER, token)
        // Kept with the cached user object; the expiry is the one part a renewal changes.
        getSessionJson.send(reply, user, session.expiresAt.getTime(), () => ({
          session: toSessionJson(session),
          user: toUserJson(user),
        }))
        return undefined
      }
      if (session.impersonatedBy !== null) return send(null)
      const token = app.tokens.issue(user, session)
      if (token instanceof Promise) return token.then(send)
      return send(token)
    },
    signOut: async (request, reply) => {
      const token = app.sessionCookie.read(request)
      if (token) await app.sessions.revokeByToken(token)
      app.sessionCookie.clear(reply)
      return { success: true as const }
    },
    listSessions: async (request) => {
      const sessions = await app.sessions.list(currentUser(request).id)
      return sessions.map((s) => ({ ...toSessionJson(s), current: s.id === request.session!.id }))
    },
    revokeSession: async (request, reply) => {
      await revokeSession(deps, contextOf(request), currentUser(request).id, request.body.id)
      if (request.body.id === request.session!.id) app.sessionCookie.clear(reply)
      return { status: true as const }
    },
    revokeOtherSessions: async (request) => {
      await revokeOtherSessions(deps, contextOf(request), currentUser(request).id, request.session!.id)
      return { status: true as const }
    },
    revokeSessions: async (request, reply) => {
      await revokeAllSessions(deps, contextOf(request), currentUser(request).id)
      app.sessionCookie.clear(reply)
      return { status: true as const }
    },
    whoami: async (request) => toWhoamiJson(currentUser(request), request.session!),
  }
})
