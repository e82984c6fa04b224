// /api/auth/* for email and password, in better-auth 1.6's JSON shapes so its client keeps working.
import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { SignUpConsents } from '../../consent/schemas.js'
import { AppError } from '../../shared/errors.js'
import { PUBLIC } from '../../plugins/route-policy.js'
import { resolveOptionalRedirect } from '../../shared/redirect.js'
import accountRoutes from './account-routes.js'
import { sendPasswordResetMail, sendVerificationMail } from './account-service.js'
import { bootstrapOwnerAtStartup } from '../bootstrap.js'
import { currentUser } from '../guard.js'
import { CallbackUrl, Email, ErrorSchema, Password, SessionSchema, toSessionJson, toUserJson, UserSchema } from '../schemas.js'
import { invalidCredentials, requestMeta, signUpWithEmail, startSession, verifyEmailPassword } from './service.js'
import { PLANS, ROLES } from '../tables.js'

const tags = ['auth']

export default async function authRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()

  const callback = (url: string | undefined) => resolveOptionalRedirect(url, app.redirectRules, 'callbackURL')

  app.post(
    '/api/auth/sign-up/email',
    {
      config: { policy: { access: 'public', rateLimit: { perIp: 'signUp' } } },
      schema: {
        operationId: 'signUpEmail',
        tags,
        summary: 'Register with email and password; signs in unless email verification is required',
        body: z.strictObject({
          name: z.string().trim().min(1).max(100),
          email: Email,
          password: Password,
          image: z.url({ protocol: /^https$/ }).max(2048).nullish(),
          callbackURL: CallbackUrl.optional(),
          rememberMe: z.boolean().optional(),
          consents: SignUpConsents.optional(),
        }),
        response: { 200: z.object({ token: z.null(), user: UserSchema }), 422: ErrorSchema, 400: ErrorSchema },
      },
    },
    async (request, reply) => {
      const body = request.body
      const callbackURL = callback(body.callbackURL)
      const user = await signUpWithEmail(app, body, requestMeta(request))
      const { requireEmailVerification, bootstrapOwnerEmail } = app.config.auth
      // The bootstrap owner's address is verified at once too: verifying it is what makes the owner.
      if (requireEmailVerification || user.email === bootstrapOwnerEmail) {
        await sendVerificationMail(app, request, user, { callbackURL, takeBudget: true })
      }
      if (!requireEmailVerification) {
        await startSession(app, request, reply, user.id, body.rememberMe ?? true)
      }
      return { token: null, user: toUserJson(user) }
    },
  )

  app.post(
    '/api/auth/sign-in/email',
    {
      config: { policy: { access: 'public', rateLimit: { perIp: 'signIn', perEmail: 'signIn' } } },
      schema: {
        operationId: 'signInEmail',
        tags,
        summary: 'Sign in with email and password',
        body: z.strictObject({
          email: Email,
          // Not the sign-up rules: a wrong-length password is just a wrong password (same 401).
          password: z.string().min(1).max(1024),
          rememberMe: z.boolean().optional(),
          callbackURL: CallbackUrl.optional(),
        }),
        response: {
          200: z.object({ redirect: z.boolean(), url: z.string().optional(), token: z.null(), user: UserSchema }),
          401: ErrorSchema,
          403: ErrorSchema,
        },
      },
    },
    async (request, reply) => {
      const { email, password, rememberMe = true } = request.body
      const callbackURL = callback(request.body.callbackURL)
      const outcome = await verifyEmailPassword(app, email, password, requestMeta(request))
      if (!outcome.ok) {
        if (outcome.reason === 'invalid') throw invalidCredentials()
        if (outcome.reason === 'reset_required') {
          await sendPasswordResetMail(app, request, outcome.user, { takeBudget: true })
          throw new AppError(403, 'PASSWORD_RESET_REQUIRED', 'This account must reset its password; an email was sent')
        }
        await sendVerificationMail(app, request, outcome.user, { callbackURL, takeBudget: true })
        throw new AppError(403, 'EMAIL_NOT_VERIFIED', 'Verify your email address before signing in')
      }
      await startSession(app, request, reply, outcome.user.id, rememberMe)
      const user = toUserJson(outcome.user)
      return callbackURL
        ? { redirect: true, url: callbackURL, token: null, user }
        : { redirect: false, token: null, user }
    },
  )

  app.get(
    '/api/auth/get-session',
    {
      config: { policy: PUBLIC },
      schema: {
        operationId: 'getSession',
        tags,
        summary: 'The current session and user, or null',
        response: { 200: z.object({ session: SessionSchema, user: UserSchema }).nullable() },
      },
    },
    async (request) => {
      if (!request.user || !request.session) return null
      return { session: toSessionJson(request.session), user: toUserJson(request.user) }
    },
  )

  app.post(
    '/api/auth/sign-out',
    {
      config: { policy: PUBLIC },
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

  await app.register(accountRoutes)
  app.addHook('onReady', () => bootstrapOwnerAtStartup(app))

  app.get(
    '/api/v1/whoami',
    {
      schema: {
        operationId: 'whoami',
        tags: ['identity'],
        summary: 'Who the current session belongs to',
        response: {
          200: z.object({
            id: z.string(),
            email: z.string(),
            name: z.string(),
            role: z.enum(ROLES),
            plan: z.enum(PLANS),
            emailVerified: z.boolean(),
            sessionExpiresAt: z.string(),
          }),
          401: ErrorSchema,
        },
      },
    },
    async (request) => {
      const user = currentUser(request)
      return {
        id: user.id,
        email: user.email,
        name: user.name,
        role: user.role,
        plan: user.plan,
        emailVerified: user.emailVerified,
        sessionExpiresAt: request.session!.expiresAt.toISOString(),
      }
    },
  )
}
