// Email and password accounts under /api/auth/*: sign-up, sign-in, password reset, email
// verification and the change of password, in better-auth 1.6's names and JSON shapes so its
// client keeps working.
import type { FastifyRequest } from 'fastify'
import { z } from 'zod'
import { SignUpConsents } from '../../consent/schemas.js'
import { contextOf } from '../../shared/context.js'
import { AppError } from '../../shared/errors.js'
import { resolveOptionalRedirect, withQuery } from '../../shared/redirect.js'
import { PUBLIC, PUBLIC_ACTS_ON_GET, REVERIFIES_PASSWORD, type RoutePolicy, SIGN_IN } from '../../shared/route-policy.js'
import { SingleLine } from '../../shared/validation.js'
import { currentUser } from '../../user/signed-in.js'
import { emailAuthDepsOf } from '../account/deps.js'
import {
  CallbackUrl,
  CurrentPassword,
  Email,
  EmailedToken,
  Password,
  Status,
  TwoFactorRedirectSchema,
  toUserJson,
  twoFactorRedirect,
  UserSchema,
} from '../core/schemas.js'
import {
  changePassword,
  invalidCredentials,
  requestPasswordReset,
  requestVerification,
  resetPassword,
  resetTokenIsLive,
  sendPasswordResetMail,
  sendVerificationMail,
  signUpWithEmail,
  verifyEmail,
  verifyEmailPassword,
} from '../email/service.js'
import { landAfterLink } from '../links/emailed-link.js'
import { afterFirstFactor, signInDepsOf, signInWith } from '../sign-in/step.js'
import { mailing, mailsAfterReply } from './mail-route.js'
import { declareRoutes, serveRoutes } from './serve.js'

/** A route that mails: public, counted per address like every mail. */
const MAILS: RoutePolicy = { access: 'public', rateLimit: { perEmail: 'mail' } }
const SignedUp = z.object({ token: z.null(), user: UserSchema })

export const emailRoutes = declareRoutes({
  signUpEmail: {
    method: 'POST',
    path: '/api/auth/sign-up/email',
    policy: { access: 'public', rateLimit: { perIp: 'signUp' } },
    summary: 'Register with email and password; signs in unless email verification is required',
    body: z.strictObject({
      name: SingleLine(1, 100),
      email: Email,
      password: Password,
      image: z
        .url({ protocol: /^https$/ })
        .max(2048)
        .nullish(),
      callbackURL: CallbackUrl.optional(),
      rememberMe: z.boolean().optional(),
      consents: SignUpConsents.optional(),
    }),
    response: { 200: SignedUp },
    errors: [400, 422],
  },
  signInEmail: {
    method: 'POST',
    path: '/api/auth/sign-in/email',
    policy: SIGN_IN,
    summary: 'Sign in with email and password',
    body: z.strictObject({
      email: Email,
      // Not the sign-up rules: a wrong-length password is just a wrong password (same 401).
      password: CurrentPassword,
      rememberMe: z.boolean().optional(),
      callbackURL: CallbackUrl.optional(),
    }),
    response: {
      // With two-factor on: no session yet, the `two_factor` cookie and better-auth's redirect answer.
      200: z.union([
        z.object({ redirect: z.boolean(), url: z.string().optional(), token: z.null(), user: UserSchema }),
        TwoFactorRedirectSchema,
      ]),
    },
    errors: [401, 403],
  },
  requestPasswordReset: mailing({
    path: '/api/auth/request-password-reset',
    policy: MAILS,
    summary: 'Mail a single-use password reset link (valid 1 h); answers the same whether the email has an account or not',
    body: z.strictObject({ email: Email, redirectTo: CallbackUrl.optional() }),
    answer: Status,
  }),
  resetPassword: {
    method: 'POST',
    path: '/api/auth/reset-password',
    policy: PUBLIC,
    summary: 'Set a new password with the emailed token; ends every session of the account',
    body: z.strictObject({ token: EmailedToken, newPassword: Password }),
    response: { 200: Status },
    errors: [400],
  },
  resetPasswordCallback: {
    method: 'GET',
    path: '/api/auth/reset-password/:token',
    policy: PUBLIC,
    summary: "better-auth's reset link: 302 to callbackURL with the token, or with ?error=INVALID_TOKEN",
    params: z.strictObject({ token: EmailedToken }),
    query: z.strictObject({ callbackURL: CallbackUrl }),
    response: { 302: z.null() },
    errors: [400, 403],
  },
  sendVerificationEmail: mailing({
    path: '/api/auth/send-verification-email',
    policy: MAILS,
    summary:
      'Mail a single-use verification link (valid 24 h) to the account of the address, verified or not (opened in a session, it proves the address for that session); answers the same in every case',
    body: z.strictObject({ email: Email, callbackURL: CallbackUrl.optional() }),
    answer: Status,
  }),
  verifyEmail: {
    method: 'GET',
    path: '/api/auth/verify-email',
    policy: PUBLIC_ACTS_ON_GET,
    summary:
      'Use an emailed link: confirm the address, or a step of a change of address (approve, then confirm the new one); redirects to callbackURL when given',
    query: z.strictObject({ token: EmailedToken, callbackURL: CallbackUrl.optional() }),
    response: { 200: Status, 302: z.null() },
    errors: [400, 403],
  },
  changePassword: {
    method: 'POST',
    path: '/api/auth/change-password',
    policy: REVERIFIES_PASSWORD,
    summary: 'Change the password; every other session of the account ends',
    body: z.strictObject({
      currentPassword: CurrentPassword,
      newPassword: Password,
      // Accepted for better-auth's client; other sessions end whatever its value.
      revokeOtherSessions: z.boolean().optional(),
    }),
    response: { 200: SignedUp },
    errors: [400, 401],
  },
})

export default serveRoutes(emailRoutes, (app) => {
  const deps = emailAuthDepsOf(app)
  const signInDeps = signInDepsOf(app)

  const callback = (url: string | undefined, field = 'callbackURL') => resolveOptionalRedirect(url, app.redirectRules, field)
  /**
   * A mail sent by a route that is not a mail route (a sign-up, a sign-in that finds a reset or a
   * verification due) takes from the client's hourly mail budget for the address, which a mail
   * route's own per-email limit already counts.
   */
  const mailBudgetLeft = async (request: FastifyRequest, email: string, mail: string): Promise<boolean> => {
    if (await app.takeMailBudget(email, request.ip)) return true
    request.log.info(`${mail} mail skipped: hourly mail budget of this address is spent`)
    return false
  }

  return {
    signUpEmail: async (request, reply) => {
      const body = request.body
      const callbackURL = callback(body.callbackURL)
      const user = await signUpWithEmail(deps, contextOf(request), body)
      const { requireEmailVerification, bootstrapOwnerEmail } = app.config.auth
      // The bootstrap owner's address is mailed its link at once too (it verifies; a reset makes the owner).
      if (requireEmailVerification || user.email === bootstrapOwnerEmail) {
        if (await mailBudgetLeft(request, user.email, 'verification')) await sendVerificationMail(deps, user, callbackURL)
      }
      if (!requireEmailVerification) {
        const outcome = await signInWith(signInDeps, contextOf(request), {
          credential: { userId: user.id, epoch: user.credentialEpoch },
          method: 'email',
          rememberMe: body.rememberMe ?? true,
          browser: app.signInCookies.browserOf(request),
        })
        app.signInCookies.set(request, reply, outcome)
      }
      return { token: null, user: toUserJson(user) }
    },
    signInEmail: async (request, reply) => {
      const { email, password, rememberMe = true } = request.body
      const callbackURL = callback(request.body.callbackURL)
      const outcome = await verifyEmailPassword(deps, contextOf(request), email, password)
      if (!outcome.ok) {
        if (outcome.reason === 'invalid') throw invalidCredentials()
        if (outcome.reason === 'reset_required') {
          if (await mailBudgetLeft(request, outcome.user.email, 'password reset')) await sendPasswordResetMail(deps, outcome.user)
          throw new AppError(403, 'PASSWORD_RESET_REQUIRED', 'This account must reset its password; an email was sent')
        }
        if (await mailBudgetLeft(request, outcome.user.email, 'verification'))
          await sendVerificationMail(deps, outcome.user, callbackURL)
        throw new AppError(403, 'EMAIL_NOT_VERIFIED', 'Verify your email address before signing in')
      }
      const signedIn = await afterFirstFactor(signInDeps, contextOf(request), {
        user: outcome.user,
        method: 'email',
        rememberMe,
        browser: app.signInCookies.browserOf(request),
      })
      app.signInCookies.set(request, reply, signedIn)
      if (signedIn.kind === 'challenge') return twoFactorRedirect(signedIn.methods)
      const user = toUserJson(outcome.user)
      return callbackURL ? { redirect: true, url: callbackURL, token: null, user } : { redirect: false, token: null, user }
    },
    // The mail routes check only the redirect first, so a hostile one is refused and never mailed.
    requestPasswordReset: mailsAfterReply(app, { status: true as const }, (body: { email: string; redirectTo?: string }) => {
      const redirectTo = callback(body.redirectTo, 'redirectTo')
      return { what: 'password reset request', mail: () => requestPasswordReset(deps, body.email, redirectTo) }
    }),
    resetPassword: async (request, reply) => {
      const { token, newPassword } = request.body
      const browser = app.signInCookies.browserOf(request).devices
      // This browser proved the mailbox: the account's one known device from now on.
      app.signInCookies.setDevices(reply, await resetPassword(deps, contextOf(request), { token, newPassword, browser }))
      // The sessions are gone; a cookie this browser still holds is dropped with them.
      if (app.sessionCookie.present(request)) app.sessionCookie.clear(reply)
      return { status: true as const }
    },
    resetPasswordCallback: async (request, reply) => {
      const target = callback(request.query.callbackURL)!
      const { token } = request.params
      // Looked at, not used: the token is spent when the new password is posted with it.
      const live = await resetTokenIsLive(deps, token)
      return reply.redirect(withQuery(target, live ? { token } : { error: 'INVALID_TOKEN' }), 302)
    },
    sendVerificationEmail: mailsAfterReply(app, { status: true as const }, (body: { email: string; callbackURL?: string }) => {
      const callbackURL = callback(body.callbackURL)
      return { what: 'verification mail request', mail: () => requestVerification(deps, body.email, callbackURL) }
    }),
    verifyEmail: async (request, reply) => {
      const callbackURL = callback(request.query.callbackURL)
      return landAfterLink(reply, callbackURL, 'invalid_token', async () => {
        await verifyEmail(deps, contextOf(request), request.query.token, request.user?.id ?? null)
        return { status: true as const }
      })
    },
    changePassword: async (request, reply) => {
      const { user, devices } = await changePassword(deps, contextOf(request), {
        userId: currentUser(request).id,
        currentSessionId: request.session!.id,
        currentPassword: request.body.currentPassword,
        newPassword: request.body.newPassword,
        browser: app.signInCookies.browserOf(request).devices,
      })
      // This browser proved the password: the account's one known device from now on.
      app.signInCookies.setDevices(reply, devices)
      return { token: null, user: toUserJson(user) }
    },
  }
})
