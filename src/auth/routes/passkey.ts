// Passkeys under /api/auth/passkey/*, in better-auth 1.6's passkey plugin's paths, bodies, answers,
// challenge cookie and error codes, so the web client adds `passkeyClient()` from
// `@better-auth/passkey` and nothing else. The rules are in passkey/service.ts.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { z } from 'zod'
import { contextOf } from '../../shared/context.js'
import { ACTS_ON_GET, addsAWayIn, SIGN_IN_PER_IP } from '../../shared/route-policy.js'
import { currentUser } from '../../user/signed-in.js'
import { SessionSchema, Status, toSessionJson, toUserJson, UserSchema } from '../core/schemas.js'
import {
  CeremonyOptions,
  DeletePasskeyBody,
  PasskeySchema,
  RegisterOptionsQuery,
  UpdatePasskeyBody,
  VerifyAuthenticationBody,
  VerifyRegistrationBody,
} from '../passkey/schemas.js'
import {
  authenticationOptions,
  CHALLENGE_TTL_MS,
  deleteOwnPasskey,
  listPasskeys,
  type PasskeyDeps,
  registrationOptions,
  renameOwnPasskey,
  verifyAuthentication,
  verifyRegistration,
} from '../passkey/service.js'
import { signInDepsOf, signInWith } from '../sign-in/step.js'
import { SignedCookie } from '../sign-in/two-factor-cookies.js'
import { declareRoutes, serveRoutes } from './serve.js'

const tags = ['passkey']

export const passkeyRoutes = declareRoutes({
  generatePasskeyRegistrationOptions: {
    method: 'GET',
    path: '/api/auth/passkey/generate-register-options',
    policy: addsAWayIn(ACTS_ON_GET),
    tags,
    summary:
      'Options for navigator.credentials.create() to add a passkey, and the challenge cookie (5 minutes); needs a session started within a day',
    query: RegisterOptionsQuery,
    response: { 200: CeremonyOptions },
    errors: [400, 401, 403],
  },
  passkeyVerifyRegistration: {
    method: 'POST',
    path: '/api/auth/passkey/verify-registration',
    policy: addsAWayIn(),
    tags,
    summary:
      "Add the passkey the authenticator made (with user verification) for the challenge cookie's options; the owner is mailed a notice",
    body: VerifyRegistrationBody,
    response: { 200: PasskeySchema },
    errors: [400, 401, 403],
  },
  passkeyGenerateAuthenticateOptions: {
    method: 'GET',
    path: '/api/auth/passkey/generate-authenticate-options',
    tags,
    // Public: a sign-in has no session yet. Per IP like every sign-in: each ceremony also stores a challenge.
    policy: SIGN_IN_PER_IP,
    summary:
      'Options for navigator.credentials.get() to sign in with a passkey (user verification required), and the challenge cookie (5 minutes)',
    query: z.strictObject({}),
    response: { 200: CeremonyOptions },
    errors: [429],
  },
  passkeyVerifyAuthentication: {
    method: 'POST',
    path: '/api/auth/passkey/verify-authentication',
    tags,
    policy: SIGN_IN_PER_IP,
    summary:
      "Sign in with a passkey's assertion for the challenge cookie's options: the session cookie is set; counts as two factors",
    body: VerifyAuthenticationBody,
    response: { 200: z.object({ session: SessionSchema, user: UserSchema }) },
    errors: [400, 401, 403, 429],
  },
  listPasskeys: {
    method: 'GET',
    path: '/api/auth/passkey/list-user-passkeys',
    tags,
    summary: "The signed-in user's passkeys, oldest first",
    response: { 200: z.array(PasskeySchema) },
    errors: [401],
  },
  updatePasskey: {
    method: 'POST',
    path: '/api/auth/passkey/update-passkey',
    tags,
    summary: "Rename one of the signed-in user's passkeys (404 PASSKEY_NOT_FOUND for any other id)",
    body: UpdatePasskeyBody,
    response: { 200: z.object({ passkey: PasskeySchema }) },
    errors: [400, 401, 404],
  },
  deletePasskey: {
    method: 'POST',
    path: '/api/auth/passkey/delete-passkey',
    tags,
    summary: "Remove one of the signed-in user's passkeys (404 PASSKEY_NOT_FOUND for any other id); the owner is mailed a notice",
    body: DeletePasskeyBody,
    response: { 200: Status },
    errors: [400, 401, 404],
  },
})

export default serveRoutes(passkeyRoutes, (app) => {
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

  return {
    generatePasskeyRegistrationOptions: async (request, reply) => {
      const { options, token } = await registrationOptions(deps, currentUser(request), request.session!, request.query)
      challengeCookie.set(reply, token)
      return { ...options }
    },
    passkeyVerifyRegistration: async (request, reply) => {
      const token = takeChallengeToken(request, reply)
      return verifyRegistration(deps, contextOf(request), currentUser(request), request.session!, token, request.body)
    },
    passkeyGenerateAuthenticateOptions: async (request, reply) => {
      // A guest has no passkey: its browser's passkey sign-in is an account's (and takes the guest's data along).
      const signedIn = request.user && !request.user.isAnonymous ? request.user.id : null
      const { options, token } = await authenticationOptions(deps, signedIn)
      challengeCookie.set(reply, token)
      return { ...options }
    },
    passkeyVerifyAuthentication: async (request, reply) => {
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
    listPasskeys: async (request) => listPasskeys(deps, currentUser(request).id),
    updatePasskey: async (request) => ({
      passkey: await renameOwnPasskey(deps, contextOf(request), currentUser(request).id, request.body),
    }),
    deletePasskey: async (request) => {
      await deleteOwnPasskey(deps, contextOf(request), currentUser(request).id, request.session!.id, request.body.id)
      return { status: true as const }
    },
  }
})
