// Two-factor authentication under /api/auth/two-factor/*, in better-auth 1.6's twoFactor plugin's
// paths, bodies, answers, cookie names and error codes, so the web client adds `twoFactorClient()`
// and nothing else. Also `signInOrChallenge`, the step every sign-in takes once the first factor passed.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { contextOf } from '../../shared/context.js'
import { AppError, ErrorSchema } from '../../shared/errors.js'
import { REVERIFIES_PASSWORD, type RoutePolicy } from '../../shared/route-policy.js'
import { PlainText } from '../../shared/validation.js'
import { currentUser } from '../guard.js'
import { CurrentPassword, Status, toUserJson, UserSchema } from '../schemas.js'
import { signInBrowser } from '../session/routes.js'
import { TwoFactorCookies } from './cookies.js'
import { TwoFactorKeys } from './crypto.js'
import {
  beginSignIn,
  disableTwoFactor,
  enableTwoFactor,
  getTotpUri,
  invalidChallenge,
  regenerateBackupCodes,
  trustDevice,
  verifyForSession,
  verifyForSignIn,
  type Method,
  type TwoFactorDeps,
} from './service.js'

const tags = ['two-factor']

interface TwoFactorKit {
  deps: TwoFactorDeps
  cookies: TwoFactorCookies
}

// One kit per app (its keys are derived once), shared by these routes and the sign-in routes that
// call signInOrChallenge.
const kits = new WeakMap<FastifyInstance, TwoFactorKit>()
function kitOf(app: FastifyInstance): TwoFactorKit {
  let kit = kits.get(app)
  if (!kit) {
    kit = {
      deps: { db: app.db, clock: app.clock, hasher: app.hasher, keys: new TwoFactorKeys(app.config.auth.secrets) },
      cookies: new TwoFactorCookies(app.config.auth),
    }
    kits.set(app, kit)
  }
  return kit
}

/**
 * After a correct first factor (password or identity provider): the session, or, when the user has
 * two-factor on and this browser is not one of their trusted devices, no session but a `two_factor`
 * challenge cookie. Whatever session the browser held ends either way: a sign-in replaces it, and a
 * verify-totp must not find another user's session.
 */
export async function signInOrChallenge(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  user: { id: string; twoFactorEnabled: boolean; credentialEpoch: number },
  rememberMe: boolean,
): Promise<'signed-in' | 'two-factor'> {
  const { deps, cookies } = kitOf(app)
  const credential = { userId: user.id, epoch: user.credentialEpoch }
  const step = await beginSignIn(deps, contextOf(request), {
    credential,
    twoFactorEnabled: user.twoFactorEnabled,
    rememberMe,
    trustedDevice: cookies.trustedDevice.read(request),
  })
  if (step.trustedDevice) cookies.trustedDevice.set(reply, step.trustedDevice)
  else if (step.trustedDevice === null) cookies.trustedDevice.clear(reply)
  if (step.kind === 'session') {
    await signInBrowser(app, request, reply, credential, rememberMe, step.twoFactorVerified)
    return 'signed-in'
  }
  const replacing = app.sessionCookie.read(request)
  if (replacing) await app.sessions.revokeByToken(replacing)
  if (app.sessionCookie.present(request)) app.sessionCookie.clear(reply)
  cookies.challenge.set(reply, step.token)
  return 'two-factor'
}

/** What a sign-in answers instead of the user when the second factor is awaited (better-auth's shape). */
export const TwoFactorRedirectSchema = z.object({
  twoFactorRedirect: z.literal(true),
  twoFactorMethods: z.array(z.literal('totp')),
})
export const twoFactorRedirect = () => ({ twoFactorRedirect: true as const, twoFactorMethods: ['totp' as const] })

export default async function twoFactorRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()
  const { deps, cookies } = kitOf(app)

  // The code is short; anything longer is not a typo of one.
  const Code = z.string().min(1).max(64)
  // Public: the second step of a sign-in has no session yet (the challenge cookie says who); a
  // signed-in user confirms the setup on the same routes. Per IP like a sign-in.
  const VERIFY: RoutePolicy = { access: 'public', rateLimit: { perIp: 'signIn' } }
  const PasswordBody = z.strictObject({ password: CurrentPassword })

  /** The options of a route that asks for the password again (REVERIFIES_PASSWORD) and answers `ok` with 200. */
  const reverifying = <Body extends z.ZodType, Ok extends z.ZodType>(
    operationId: string,
    summary: string,
    body: Body,
    ok: Ok,
  ) => ({
    // Wrong answers to the password are counted per account, whichever of these routes asked.
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
    async (request) => getTotpUri(deps, currentUser(request), request.body.password),
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
    if (request.user && request.session) {
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
    await signInBrowser(app, request, reply, verified.credential, verified.rememberMe, true)
    if (trust) cookies.trustedDevice.set(reply, await trustDevice(deps, verified.user.id))
    return { token: null, user: toUserJson(verified.user) }
  }

  /** The options of verify-totp and verify-backup-code: a code, and whether to trust this device. */
  const verifying = (operationId: string, summary: string) => ({
    config: { policy: VERIFY },
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
