// Passkeys under /api/auth/passkey/*, in better-auth 1.6's passkey plugin's paths, bodies, answers,
// challenge cookie and error codes, so the web client adds `passkeyClient()` from
// `@better-auth/passkey` and nothing else. The rules are in service.ts.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { contextOf } from '../../shared/context.js'
import { ErrorSchema } from '../../shared/errors.js'
import { ACTS_ON_GET, SIGN_IN_PER_IP } from '../../shared/route-policy.js'
import { SessionSchema, Status, toSessionJson, toUserJson, UserSchema } from '../schemas.js'
import { currentUser } from '../../user/signed-in.js'
import { signInDepsOf, signInWith } from '../session/sign-in.js'
import { SignedCookie } from '../two-factor/cookies.js'
import {
  CeremonyOptions,
  DeletePasskeyBody,
  PasskeySchema,
  RegisterOptionsQuery,
  UpdatePasskeyBody,
  VerifyAuthenticationBody,
  VerifyRegistrationBody,
} from './schemas.js'
import {
  authenticationOptions,
  CHALLENGE_TTL_MS,
  deleteOwnPasskey,
  listPasskeys,
  registrationOptions,
  renameOwnPasskey,
  verifyAuthentication,
  verifyRegistration,
  type PasskeyDeps,
} from './service.js'

const tags = ['passkey']

export default async function passkeyRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()
  const deps: PasskeyDeps = {
    db: app.db,
    clock: app.clock,
    relyingParty: app.config.auth.passkey,
    notices: app.securityNotices,
  }
  const signInDeps = signInDepsOf(app)
  // better-auth's `better-auth-passkey` cookie under its prefix: the challenge's token, 5 minutes.
  const challengeCookie = new SignedCookie(app.config.auth, 'better-auth.better-auth-passkey', CHALLENGE_TTL_MS)

  /** The challenge cookie's token, and the cookie cleared: a challenge serves one answer, right or wrong. */
  const takeChallengeToken = (request: FastifyRequest, reply: FastifyReply): string | null => {
    if (challengeCookie.present(request)) challengeCookie.clear(reply)
    return challengeCookie.read(request)
  }

  app.get(
    '/api/auth/passkey/generate-register-options',
    {
      config: { policy: ACTS_ON_GET },
      schema: {
        operationId: 'generatePasskeyRegistrationOptions',
        tags,
        summary:
          'Options for navigator.credentials.create() to add a passkey, and the challenge cookie (5 minutes); needs a session started within a day',
        querystring: RegisterOptionsQuery,
        response: { 200: CeremonyOptions, 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema },
      },
    },
    async (request, reply) => {
      const { options, token } = await registrationOptions(deps, currentUser(request), request.session!, request.query)
      challengeCookie.set(reply, token)
      return { ...options }
    },
  )

  app.post(
    '/api/auth/passkey/verify-registration',
    {
      schema: {
        operationId: 'passkeyVerifyRegistration',
        tags,
        summary:
          "Add the passkey the authenticator made (with user verification) for the challenge cookie's options; the owner is mailed a notice",
        body: VerifyRegistrationBody,
        response: { 200: PasskeySchema, 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema },
      },
    },
    async (request, reply) => {
      const token = takeChallengeToken(request, reply)
      return verifyRegistration(deps, contextOf(request), currentUser(request), request.session!, token, request.body)
    },
  )

  app.get(
    '/api/auth/passkey/generate-authenticate-options',
    {
      // Public: a sign-in has no session yet. Per IP like every sign-in: each ceremony also stores a challenge.
      config: { policy: SIGN_IN_PER_IP },
      schema: {
        operationId: 'passkeyGenerateAuthenticateOptions',
        tags,
        summary:
          'Options for navigator.credentials.get() to sign in with a passkey (user verification required), and the challenge cookie (5 minutes)',
        querystring: z.strictObject({}),
        response: { 200: CeremonyOptions, 429: ErrorSchema },
      },
    },
    async (request, reply) => {
      // A guest has no passkey: its browser's passkey sign-in is an account's (and takes the guest's data along).
      const signedIn = request.user && !request.user.isAnonymous ? request.user.id : null
      const { options, token } = await authenticationOptions(deps, signedIn)
      challengeCookie.set(reply, token)
      return { ...options }
    },
  )

  app.post(
    '/api/auth/passkey/verify-authentication',
    {
      config: { policy: SIGN_IN_PER_IP },
      schema: {
        operationId: 'passkeyVerifyAuthentication',
        tags,
        summary:
          "Sign in with a passkey's assertion for the challenge cookie's options: the session cookie is set; counts as two factors",
        body: VerifyAuthenticationBody,
        response: {
          200: z.object({ session: SessionSchema, user: UserSchema }),
          400: ErrorSchema,
          401: ErrorSchema,
          403: ErrorSchema,
          429: ErrorSchema,
        },
      },
    },
    async (request, reply) => {
      const ctx = contextOf(request)
      const token = takeChallengeToken(request, reply)
      const verified = await verifyAuthentication(deps, ctx, token, request.body.response)
      const outcome = await signInWith(signInDeps, ctx, {
        credential: verified.credential,
        // better-auth's passkey sign-in keeps the session as a remembered one.
        rememberMe: true,
        browser: app.signInCookies.browserOf(request),
        // User verification was required: the passkey is something held and something known or been.
        twoFactorVerified: true,
        method: 'passkey',
      })
      app.signInCookies.set(request, reply, outcome)
      return { session: toSessionJson(outcome.session), user: toUserJson(verified.user) }
    },
  )

  app.get(
    '/api/auth/passkey/list-user-passkeys',
    {
      schema: {
        operationId: 'listPasskeys',
        tags,
        summary: "The signed-in user's passkeys, oldest first",
        response: { 200: z.array(PasskeySchema), 401: ErrorSchema },
      },
    },
    async (request) => listPasskeys(deps, currentUser(request).id),
  )

  app.post(
    '/api/auth/passkey/update-passkey',
    {
      schema: {
        operationId: 'updatePasskey',
        tags,
        summary: "Rename one of the signed-in user's passkeys (404 PASSKEY_NOT_FOUND for any other id)",
        body: UpdatePasskeyBody,
        response: { 200: z.object({ passkey: PasskeySchema }), 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema },
      },
    },
    async (request) => ({
      passkey: await renameOwnPasskey(deps, contextOf(request), currentUser(request).id, request.body),
    }),
  )

  app.post(
    '/api/auth/passkey/delete-passkey',
    {
      schema: {
        operationId: 'deletePasskey',
        tags,
        summary:
          "Remove one of the signed-in user's passkeys (404 PASSKEY_NOT_FOUND for any other id); the owner is mailed a notice",
        body: DeletePasskeyBody,
        response: { 200: Status, 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema },
      },
    },
    async (request) => {
      await deleteOwnPasskey(deps, contextOf(request), currentUser(request).id, request.session!.id, request.body.id)
      return { status: true as const }
    },
  )
}
