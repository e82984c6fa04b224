// Password reset, email verification, change password and the session list, under /api/auth/*
// with better-auth's names and JSON shapes (API.md §4).
import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { recordAudit } from '../../shared/audit.js'
import { AppError, notFound } from '../../shared/errors.js'
import { PUBLIC } from '../../plugins/route-policy.js'
import { resolveOptionalRedirect } from '../../shared/redirect.js'
import { changePassword, requestPasswordReset, requestVerification, resetPassword, verifyEmail } from './account-service.js'
import { currentUser } from '../guard.js'
import { CallbackUrl, Email, ErrorSchema, Password, SessionSchema, toSessionJson, toUserJson, UserSchema } from '../schemas.js'

const tags = ['auth']
const Status = z.object({ status: z.literal(true) })
const Token = z.string().min(1).max(256)

export default async function accountRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()

  const callback = (url: string | undefined, field: string) => resolveOptionalRedirect(url, app.redirectRules, field)
  // The mail routes answer before they look the address up: the same work, so the same time, for an
  // email with an account and one without (no enumeration by timing).
  const MAIL_ROUTE = { access: 'public', rateLimit: { perEmail: 'mail' } } as const

  app.post(
    '/api/auth/request-password-reset',
    {
      config: { policy: MAIL_ROUTE },
      schema: {
        operationId: 'requestPasswordReset',
        tags,
        summary: 'Mail a single-use password reset link (valid 1 h); answers the same whether the email has an account or not',
        body: z.strictObject({ email: Email, redirectTo: CallbackUrl.optional() }),
        response: { 200: Status, 400: ErrorSchema, 403: ErrorSchema, 429: ErrorSchema },
      },
    },
    async (request) => {
      const { email } = request.body
      const redirectTo = callback(request.body.redirectTo, 'redirectTo')
      app.afterReply(request, 'password reset request', () => requestPasswordReset(app, request, email, redirectTo))
      return { status: true as const }
    },
  )

  app.post(
    '/api/auth/reset-password',
    {
      config: { policy: PUBLIC },
      schema: {
        operationId: 'resetPassword',
        tags,
        summary: 'Set a new password with the emailed token; ends every session of the account',
        body: z.strictObject({ token: Token, newPassword: Password }),
        response: { 200: Status, 400: ErrorSchema },
      },
    },
    async (request, reply) => {
      await resetPassword(app, request, request.body.token, request.body.newPassword)
      // The sessions are gone; a cookie this browser still holds is dropped with them.
      if (app.sessionCookie.present(request)) app.sessionCookie.clear(reply)
      return { status: true as const }
    },
  )

  app.post(
    '/api/auth/send-verification-email',
    {
      config: { policy: MAIL_ROUTE },
      schema: {
        operationId: 'sendVerificationEmail',
        tags,
        summary: 'Mail a single-use verification link (valid 24 h) to an unverified account; answers the same in every case',
        body: z.strictObject({ email: Email, callbackURL: CallbackUrl.optional() }),
        response: { 200: Status, 400: ErrorSchema, 403: ErrorSchema, 429: ErrorSchema },
      },
    },
    async (request) => {
      const { email } = request.body
      const callbackURL = callback(request.body.callbackURL, 'callbackURL')
      app.afterReply(request, 'verification mail request', () => requestVerification(app, request, email, callbackURL))
      return { status: true as const }
    },
  )

  app.get(
    '/api/auth/verify-email',
    {
      config: { policy: PUBLIC },
      schema: {
        operationId: 'verifyEmail',
        tags,
        summary: 'Confirm the email address from the emailed link; redirects to callbackURL when given',
        querystring: z.strictObject({ token: Token, callbackURL: CallbackUrl.optional() }),
        response: { 200: Status, 302: z.null(), 400: ErrorSchema, 403: ErrorSchema },
      },
    },
    async (request, reply) => {
      const { token } = request.query
      const callbackURL = callback(request.query.callbackURL, 'callbackURL')
      const target = callbackURL === undefined ? undefined : new URL(callbackURL)
      try {
        await verifyEmail(app, request, token)
      } catch (err) {
        if (!target || !(err instanceof AppError) || err.code !== 'INVALID_TOKEN') throw err
        target.searchParams.set('error', 'invalid_token')
        return reply.redirect(target.toString(), 302)
      }
      if (target) return reply.redirect(target.toString(), 302)
      return { status: true as const }
    },
  )

  app.post(
    '/api/auth/change-password',
    {
      config: { policy: { reverifiesPassword: true } },
      schema: {
        operationId: 'changePassword',
        tags,
        summary: 'Change the password; every other session of the account ends',
        body: z.strictObject({
          currentPassword: z.string().min(1).max(1024),
          newPassword: Password,
          // Accepted for better-auth's client; other sessions end whatever its value (API.md §2).
          revokeOtherSessions: z.boolean().optional(),
        }),
        response: { 200: z.object({ token: z.null(), user: UserSchema }), 400: ErrorSchema, 401: ErrorSchema },
      },
    },
    async (request) => {
      const user = await changePassword(app, request, {
        userId: currentUser(request).id,
        currentSessionId: request.session!.id,
        currentPassword: request.body.currentPassword,
        newPassword: request.body.newPassword,
      })
      return { token: null, user: toUserJson(user) }
    },
  )

  app.get(
    '/api/auth/list-sessions',
    {
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
      schema: {
        operationId: 'revokeSession',
        tags,
        summary: 'End one session of the current user by its public id (404 for an unknown id or another user\'s)',
        body: z.strictObject({ id: z.string().min(1).max(64) }),
        response: { 200: Status, 401: ErrorSchema, 404: ErrorSchema },
      },
    },
    async (request, reply) => {
      const user = currentUser(request)
      if (!(await app.sessions.revokeById(user.id, request.body.id))) throw notFound('Session')
      await recordAudit(app.db, { actorId: user.id, action: 'auth.session_revoked', targetType: 'session', targetId: request.body.id, ip: request.ip })
      if (request.body.id === request.session!.id) app.sessionCookie.clear(reply)
      return { status: true as const }
    },
  )

  app.post(
    '/api/auth/revoke-other-sessions',
    {
      schema: {
        operationId: 'revokeOtherSessions',
        tags,
        summary: 'End every session of the current user but this one',
        body: z.strictObject({}).optional(),
        response: { 200: Status, 401: ErrorSchema },
      },
    },
    async (request) => {
      const user = currentUser(request)
      const ended = await app.sessions.revokeAll(user.id, request.session!.id)
      await recordAudit(app.db, { actorId: user.id, action: 'auth.other_sessions_revoked', targetType: 'user', targetId: user.id, ip: request.ip, details: { ended } })
      return { status: true as const }
    },
  )
}
