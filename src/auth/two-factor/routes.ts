// Two-factor authentication under /api/auth/two-factor/*, in better-auth 1.6's twoFactor plugin's
// paths, bodies, answers, cookie names and error codes, so the web client adds `twoFactorClient()`
// and nothing else. The step every sign-in takes once the first factor passed is session/sign-in.ts.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { contextOf } from '../../shared/context.js'
import { AppError, ErrorSchema } from '../../shared/errors.js'
import { REVERIFIES_PASSWORD, SIGN_IN_PER_IP } from '../../shared/route-policy.js'
import { PlainText } from '../../shared/validation.js'
import { currentUser } from '../../user/signed-in.js'
import { CurrentPassword, Status, toUserJson, UserSchema } from '../schemas.js'
import { signInDepsOf, signInWith } from '../session/sign-in.js'
import {
  disableTwoFactor,
  enableTwoFactor,
  getTotpUri,
  invalidChallenge,
  regenerateBackupCodes,
  trustDevice,
  verifyForSession,
  verifyForSignIn,
  type Method,
} from './service.js'

const tags = ['two-factor']

export default async function twoFactorRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()
  const { cookies } = app.twoFactor
  // Turning it on or off mails the owner a security notice (src/auth/security/notices.ts).
  const deps = { ...app.twoFactor.deps, notices: app.securityNotices }
  const signInDeps = signInDepsOf(app)

  // The code is short; anything longer is not a typo of one.
  const Code = z.string().min(1).max(64)
  const PasswordBody = z.strictObject({ password: CurrentPassword })

  /** The options of a route that asks for the password again (REVERIFIES_PASSWORD) and answers `ok` with 200. */
  const reverifying = <Body extends z.ZodType, Ok extends z.ZodType>(
    operationId: string,
    summary: string,
    body: Body,
    ok: Ok,
  ) => ({
    // Attempts at the password (right ones too) are counted per account, whichever of these routes asked.
    config: { policy: REVERIFIES_PASSWORD },
    schema: { operationId, tags, summary, body, response: { 200: ok, 400: ErrorSchema, 401: ErrorSchema, 429: ErrorSchema } },
  })

  app.post(
    '/api/auth/two-factor/enable',
    reverifying(
      'enableTwoFactor',
      'Start setting up TOTP: the URI to scan and ten backup codes, shown once; on after the first verify-totp',
      // Storable text only: a lone surrogate cannot be put in the URI (encodeURIComponent throws).
      z.strictObject({ password: CurrentPassword, issuer: PlainText(1, 64).optional() }),
      z.object({ totpURI: z.string(), backupCodes: z.array(z.string()) }),
    ),
    async (request) => enableTwoFactor(deps, contextOf(request), currentUser(request), request.body),
  )

  app.post(
    '/api/auth/two-factor/get-totp-uri',
    reverifying(
      'getTotpUri',
      'The TOTP URI of the current secret, to scan it again',
      PasswordBody,
      z.object({ totpURI: z.string() }),
    ),
    async (request) => getTotpUri(deps, contextOf(request), currentUser(request), request.body.password),
  )

  app.post(
    '/api/auth/two-factor/generate-backup-codes',
    reverifying(
      'generateBackupCodes',
      'Ten new backup codes, shown once; the earlier ones stop working',
      PasswordBody,
      z.object({ status: z.literal(true), backupCodes: z.array(z.string()) }),
    ),
    async (request) => ({
      status: true as const,
      backupCodes: await regenerateBackupCodes(deps, contextOf(request), currentUser(request), request.body.password),
    }),
  )

  app.post(
    '/api/auth/two-factor/disable',
    reverifying(
      'disableTwoFactor',
      'Turn two-factor off; every trusted device of the account is forgotten',
      PasswordBody,
      Status,
    ),
    async (request, reply) => {
      await disableTwoFactor(deps, contextOf(request), currentUser(request).id, request.body.password)
      if (cookies.trustedDevice.present(request)) cookies.trustedDevice.clear(reply)
      return { status: true as const }
    },
  )

  /** verify-totp and verify-backup-code: the same two cases, a signed-in user or a sign-in challenge. */
  const verify = async (request: FastifyRequest, reply: FastifyReply, method: Method, code: string, trust: boolean) => {
    const ctx = contextOf(request)
    // A guest cannot set up two-factor: its session here is a sign-in's, waiting for its second step.
    if (request.user && request.session && !request.user.isAnonymous) {
      const user = await verifyForSession(deps, ctx, request.user, request.session.id, method, code)
      return { token: null, user: toUserJson(user) }
    }
    const challenge = cookies.challenge.read(request)
    if (!challenge) {
      if (cookies.challenge.present(request)) cookies.challenge.clear(reply)
      throw invalidChallenge()
    }
    let verified: Awaited<ReturnType<typeof verifyForSignIn>>
    try {
      verified = await verifyForSignIn(deps, ctx, challenge, method, code)
    } catch (err) {
      // A challenge that is gone or spent is of no further use to the browser.
      if (
        err instanceof AppError &&
        (err.code === 'INVALID_TWO_FACTOR_COOKIE' || err.code === 'TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE')
      )
        cookies.challenge.clear(reply)
      throw err
    }
    cookies.challenge.clear(reply)
    const outcome = await signInWith(signInDeps, ctx, {
      credential: verified.credential,
      method: verified.method,
      rememberMe: verified.rememberMe,
      browser: app.signInCookies.browserOf(request),
      twoFactorVerified: true,
      link: verified.link,
    })
    app.signInCookies.set(request, reply, outcome)
    if (trust) cookies.trustedDevice.set(reply, await trustDevice(deps, verified.user.id))
    return { token: null, user: toUserJson(verified.user) }
  }

  /** The options of verify-totp and verify-backup-code: a code, and whether to trust this device. */
  const verifying = (operationId: string, summary: string) => ({
    // Public: the second step of a sign-in has no session yet (the challenge cookie says who); a
    // signed-in user confirms the setup on the same routes.
    config: { policy: SIGN_IN_PER_IP },
    schema: {
      operationId,
      tags,
      summary,
      body: z.strictObject({ code: Code, trustDevice: z.boolean().optional() }),
      response: {
        200: z.object({ token: z.null(), user: UserSchema }),
        400: ErrorSchema,
        401: ErrorSchema,
        403: ErrorSchema,
        429: ErrorSchema,
      },
    },
  })

  app.post(
    '/api/auth/two-factor/verify-totp',
    verifying(
      'verifyTotp',
      'A TOTP code: completes a sign-in (two_factor cookie) and starts the session, or confirms the setup of a signed-in user',
    ),
    async (request, reply) => verify(request, reply, 'totp', request.body.code, request.body.trustDevice === true),
  )

  app.post(
    '/api/auth/two-factor/verify-backup-code',
    verifying(
      'verifyBackupCode',
      'A backup code (each works once): completes a sign-in (two_factor cookie) and starts the session',
    ),
    async (request, reply) => verify(request, reply, 'backup-code', request.body.code, request.body.trustDevice === true),
  )
}
