// Two-factor authentication under /api/auth/two-factor/*, in better-auth 1.6's twoFactor plugin's
// paths, bodies, answers, cookie names and error codes, so the web client adds `twoFactorClient()`
// and nothing else. The step every sign-in takes once the first factor passed is sign-in/step.ts.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { z } from 'zod'
import { contextOf } from '../../shared/context.js'
import { AppError } from '../../shared/errors.js'
import { REVERIFIES_PASSWORD, SIGN_IN_PER_IP } from '../../shared/route-policy.js'
import { PlainText } from '../../shared/validation.js'
import { currentUser } from '../../user/signed-in.js'
import { CurrentPassword, Status, toUserJson, UserSchema } from '../core/schemas.js'
import { trustDevice } from '../sign-in/challenge.js'
import { signInDepsOf, signInWith } from '../sign-in/step.js'
import {
  disableTwoFactor,
  enableTwoFactor,
  getTotpUri,
  invalidChallenge,
  type Method,
  regenerateBackupCodes,
  verifyForSession,
  verifyForSignIn,
} from '../two-factor/service.js'
import { declareRoutes, serveRoutes } from './serve.js'

const tags = ['two-factor']
const PasswordBody = z.strictObject({ password: CurrentPassword })
/** A route that asks for the password again: attempts (right ones too) are counted per account, whichever route asked. */
const REVERIFYING = { method: 'POST', tags, policy: REVERIFIES_PASSWORD, errors: [400, 401, 429] } as const
/**
 * verify-totp and verify-backup-code. Public: the second step of a sign-in has no session yet (the
 * challenge cookie says who); a signed-in user confirms the setup on the same routes.
 */
const VERIFYING = {
  method: 'POST',
  tags,
  policy: SIGN_IN_PER_IP,
  // The code is short; anything longer is not a typo of one.
  body: z.strictObject({ code: z.string().min(1).max(64), trustDevice: z.boolean().optional() }),
  response: { 200: z.object({ token: z.null(), user: UserSchema }) },
  errors: [400, 401, 403, 429],
} as const

export const twoFactorRoutes = declareRoutes({
  enableTwoFactor: {
    ...REVERIFYING,
    path: '/api/auth/two-factor/enable',
    summary: 'Start setting up TOTP: the URI to scan and ten backup codes, shown once; on after the first verify-totp',
    // Storable text only: a lone surrogate cannot be put in the URI (encodeURIComponent throws).
    body: z.strictObject({ password: CurrentPassword, issuer: PlainText(1, 64).optional() }),
    response: { 200: z.object({ totpURI: z.string(), backupCodes: z.array(z.string()) }) },
  },
  getTotpUri: {
    ...REVERIFYING,
    path: '/api/auth/two-factor/get-totp-uri',
    summary: 'The TOTP URI of the current secret, to scan it again',
    body: PasswordBody,
    response: { 200: z.object({ totpURI: z.string() }) },
  },
  generateBackupCodes: {
    ...REVERIFYING,
    path: '/api/auth/two-factor/generate-backup-codes',
    summary: 'Ten new backup codes, shown once; the earlier ones stop working',
    body: PasswordBody,
    response: { 200: z.object({ status: z.literal(true), backupCodes: z.array(z.string()) }) },
  },
  disableTwoFactor: {
    ...REVERIFYING,
    path: '/api/auth/two-factor/disable',
    summary: 'Turn two-factor off; every trusted device of the account is forgotten',
    body: PasswordBody,
    response: { 200: Status },
  },
  verifyTotp: {
    ...VERIFYING,
    path: '/api/auth/two-factor/verify-totp',
    summary:
      'A TOTP code: completes a sign-in (two_factor cookie) and starts the session, or confirms the setup of a signed-in user',
  },
  verifyBackupCode: {
    ...VERIFYING,
    path: '/api/auth/two-factor/verify-backup-code',
    summary: 'A backup code (each works once): completes a sign-in (two_factor cookie) and starts the session',
  },
})

export default serveRoutes(twoFactorRoutes, (app) => {
  const { cookies } = app.twoFactor
  // Turning it on or off mails the owner a security notice (src/auth/security/notices.ts).
  const deps = { ...app.twoFactor.deps, notices: app.securityNotices }
  const signInDeps = signInDepsOf(app)

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

  return {
    enableTwoFactor: async (request) => enableTwoFactor(deps, contextOf(request), currentUser(request), request.body),
    getTotpUri: async (request) => getTotpUri(deps, contextOf(request), currentUser(request), request.body.password),
    generateBackupCodes: async (request) => ({
      status: true as const,
      backupCodes: await regenerateBackupCodes(deps, contextOf(request), currentUser(request), request.body.password),
    }),
    disableTwoFactor: async (request, reply) => {
      await disableTwoFactor(deps, contextOf(request), currentUser(request).id, request.body.password)
      if (cookies.trustedDevice.present(request)) cookies.trustedDevice.clear(reply)
      return { status: true as const }
    },
    verifyTotp: async (request, reply) => verify(request, reply, 'totp', request.body.code, request.body.trustDevice === true),
    verifyBackupCode: async (request, reply) =>
      verify(request, reply, 'backup-code', request.body.code, request.body.trustDevice === true),
  }
})
