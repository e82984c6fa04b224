// Sign-in without a password, in better-auth 1.6's names and JSON shapes so its `emailOTPClient()`
// and `magicLinkClient()` work unchanged: emailed one-time codes (sign-in, email verification,
// password reset) and emailed sign-in links. The rules are in mailbox/service.ts.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { z } from 'zod'
import { contextOf } from '../../shared/context.js'
import { forbidden } from '../../shared/errors.js'
import { resolveOptionalRedirect, resolveRedirect, withQuery } from '../../shared/redirect.js'
import { type RoutePolicy, SIGN_IN_PER_IP, SIGN_IN_WITH_CODE } from '../../shared/route-policy.js'
import { SingleLine } from '../../shared/validation.js'
import type { UserWithFlags } from '../../user/types.js'
import { emailAuthDepsOf } from '../account/deps.js'
import {
  CallbackUrl,
  Email,
  EmailedToken,
  Password,
  TwoFactorRedirectSchema,
  toUserJson,
  twoFactorRedirect,
  UserSchema,
} from '../core/schemas.js'
import { CodeStore } from '../links/codes.js'
import { MAGIC_LINK_VERIFY_PATH, renderSignInPage, renderUsedLinkPage } from '../mailbox/page.js'
import {
  CODE_TYPES,
  type CodeType,
  type MailboxDeps,
  type MailboxMethod,
  magicLinkAddress,
  magicLinkGuest,
  requestMagicLink,
  resetPasswordWithCode,
  sendCode,
  signInWithCode,
  signInWithMagicLink,
  verifyEmailWithCode,
} from '../mailbox/service.js'
import { afterFirstFactor, signInDepsOf } from '../sign-in/step.js'
import { linkPage, pageOfLink } from './link-page.js'
import { mailing, mailsAfterReply } from './mail-route.js'
import { declareRoutes, serveRoutes } from './serve.js'

const guestAskedElsewhere = () =>
  forbidden('This sign-in link was asked for in another browser: ask for a new one here, or open it where you asked for it')

/** A route that mails a link: per IP like a sign-in, per address and client like every mail. */
const MAILS_LINK: RoutePolicy = { access: 'public', rateLimit: { perIp: 'signIn', perEmail: 'mail' } }
/** A route that mails a code: as a link, and held to the daily and per-address caps of codes. */
const MAILS_CODE: RoutePolicy = { access: 'public', rateLimit: { perIp: 'signIn', perEmail: 'codeMail' } }
// A route that takes a code is a SIGN_IN_WITH_CODE; a sign-in link's page and its button, with no
// address in the request, are SIGN_IN_PER_IP.

/** Six digits, as mailed: anything else cannot be a code and spends no try. */
export const Otp = z.string().regex(/^\d{6}$/, 'six digits')
const Success = z.object({ success: z.literal(true) })
const CodeTypes = Object.keys(CODE_TYPES) as [CodeType, ...CodeType[]]

export const mailboxRoutes = declareRoutes({
  sendEmailVerificationOTP: mailing({
    path: '/api/auth/email-otp/send-verification-otp',
    policy: MAILS_CODE,
    summary:
      'Mail a six-digit code (5 min, 3 tries) to sign in, verify the address or reset the password; the same answer whether the address has an account or not',
    body: z.strictObject({ email: Email, type: z.enum(CodeTypes) }),
    answer: Success,
  }),
  requestPasswordResetWithEmailOTP: mailing({
    path: '/api/auth/email-otp/request-password-reset',
    policy: MAILS_CODE,
    summary: 'Mail a six-digit password reset code (5 min, 3 tries); the same answer whether the address has an account or not',
    body: z.strictObject({ email: Email }),
    answer: Success,
  }),
  signInWithEmailOTP: {
    method: 'POST',
    path: '/api/auth/sign-in/email-otp',
    policy: SIGN_IN_WITH_CODE,
    summary:
      'Sign in with a mailed code; creates a verified account for a new address. With two-factor on, the second step is asked for as after a password',
    body: z.strictObject({
      email: Email,
      otp: Otp,
      name: SingleLine(1, 100).optional(),
      image: z
        .url({ protocol: /^https$/ })
        .max(2048)
        .nullish(),
      rememberMe: z.boolean().optional(),
    }),
    response: { 200: z.union([z.object({ token: z.null(), user: UserSchema }), TwoFactorRedirectSchema]) },
    errors: [400, 403],
  },
  verifyEmailOTP: {
    method: 'POST',
    path: '/api/auth/email-otp/verify-email',
    policy: SIGN_IN_WITH_CODE,
    summary: 'Verify the address with a mailed code',
    body: z.strictObject({ email: Email, otp: Otp }),
    response: { 200: z.object({ status: z.literal(true), token: z.null(), user: UserSchema }) },
    errors: [400],
  },
  resetPasswordWithEmailOTP: {
    method: 'POST',
    path: '/api/auth/email-otp/reset-password',
    policy: SIGN_IN_WITH_CODE,
    summary: 'Set a new password with a mailed code; ends every session of the account',
    body: z.strictObject({ email: Email, otp: Otp, password: Password }),
    response: { 200: Success },
    errors: [400],
  },
  signInWithMagicLink: mailing({
    path: '/api/auth/sign-in/magic-link',
    policy: MAILS_LINK,
    summary:
      'Mail a single-use sign-in link (5 min); using it creates a verified account for a new address. The same answer whether the address has an account or not',
    body: z.strictObject({
      email: Email,
      name: SingleLine(1, 100).optional(),
      callbackURL: CallbackUrl.optional(),
      newUserCallbackURL: CallbackUrl.optional(),
      errorCallbackURL: CallbackUrl.optional(),
    }),
    answer: z.object({ status: z.literal(true) }),
  }),
  verifyMagicLink: linkPage({
    path: MAGIC_LINK_VERIFY_PATH,
    summary: `The mailed sign-in link: an HTML page whose button (POST ${MAGIC_LINK_VERIFY_PATH}) signs in; opening it signs nobody in and spends nothing`,
  }),
  confirmMagicLink: {
    method: 'POST',
    path: MAGIC_LINK_VERIFY_PATH,
    policy: SIGN_IN_PER_IP,
    summary:
      "Use a sign-in link (its page's button): signs in and answers where to go, the link's newUserCallbackURL for a new account; with two-factor on, callbackURL with twoFactorRedirect=true and the second step's cookie",
    body: z.strictObject({ token: EmailedToken }),
    response: {
      200: z.union([
        z.object({ redirect: z.literal(true), url: z.string(), token: z.null(), user: UserSchema }),
        TwoFactorRedirectSchema.extend({ url: z.string() }),
      ]),
    },
    errors: [400, 403],
  },
})

export default serveRoutes(mailboxRoutes, (app) => {
  const deps: MailboxDeps = { ...emailAuthDepsOf(app), codes: new CodeStore(app.config.auth.secrets[0]!) }
  const signInDeps = signInDepsOf(app)
  const redirect = (url: string | undefined, field: string) => resolveOptionalRedirect(url, app.redirectRules, field)

  /** A code is mailed after the answer, whatever the address (mail-route.ts). */
  const codeMailed = mailsAfterReply(
    app,
    { success: true as const },
    ({ email, type = 'forget-password' }: { email: string; type?: CodeType }) => ({
      what: `${type} code`,
      mail: () => sendCode(deps, email, type),
    }),
  )

  /** A sign-in by mailbox proof: the one sign-in step, second factor included, and its cookies. */
  const signIn = async (
    request: FastifyRequest,
    reply: FastifyReply,
    user: UserWithFlags,
    method: MailboxMethod,
    rememberMe: boolean,
  ) => {
    const outcome = await afterFirstFactor(signInDeps, contextOf(request), {
      user,
      method,
      rememberMe,
      browser: app.signInCookies.browserOf(request),
    })
    app.signInCookies.set(request, reply, outcome)
    return outcome
  }

  return {
    sendEmailVerificationOTP: codeMailed,
    requestPasswordResetWithEmailOTP: codeMailed,
    signInWithEmailOTP: async (request, reply) => {
      const { rememberMe = true, ...input } = request.body
      const { user } = await signInWithCode(deps, contextOf(request), input)
      const outcome = await signIn(request, reply, user, 'email-otp', rememberMe)
      if (outcome.kind === 'challenge') return twoFactorRedirect(outcome.methods)
      return { token: null, user: toUserJson(user) }
    },
    verifyEmailOTP: async (request) => {
      const user = await verifyEmailWithCode(deps, contextOf(request), request.body, request.user?.id ?? null)
      return { status: true as const, token: null, user: toUserJson(user) }
    },
    resetPasswordWithEmailOTP: async (request, reply) => {
      const browser = app.signInCookies.browserOf(request).devices
      // This browser proved the mailbox: the account's one known device from now on.
      app.signInCookies.setDevices(reply, await resetPasswordWithCode(deps, contextOf(request), { ...request.body, browser }))
      // The sessions are gone; a cookie this browser still holds is dropped with them.
      if (app.sessionCookie.present(request)) app.sessionCookie.clear(reply)
      return { success: true as const }
    },
    signInWithMagicLink: mailsAfterReply(
      app,
      { status: true as const },
      (
        body: { email: string; name?: string; callbackURL?: string; newUserCallbackURL?: string; errorCallbackURL?: string },
        request,
      ) => {
        const { email, name } = body
        // Resolved now, by the one redirect rule: a hostile target is refused here and never mailed.
        // errorCallbackURL is checked like the others; a link that fails says so on its own page.
        redirect(body.errorCallbackURL, 'errorCallbackURL')
        const urls = {
          callbackURL: resolveRedirect(body.callbackURL ?? '/', app.redirectRules, 'callbackURL'),
          newUserCallbackURL: redirect(body.newUserCallbackURL, 'newUserCallbackURL'),
        }
        // A guest's browser that asks for a link is the one guest the link may adopt (confirmMagicLink).
        const { guest } = app.signInCookies.browserOf(request)
        return { what: 'sign-in link', mail: () => requestMagicLink(deps, { email, name, urls, guest }) }
      },
    ),
    verifyMagicLink: pageOfLink({
      find: (token) => magicLinkAddress(deps, token),
      live: (email, token) => renderSignInPage(token, email),
      dead: renderUsedLinkPage,
    }),
    confirmMagicLink: async (request, reply) => {
      // A link is pressed wherever it is opened, and anyone may send a guest their own (login CSRF):
      // in a guest's browser it signs in, and adopts what the guest made, only if that browser asked
      // for it. Refused before the link is used: nothing moves, nothing is lost, the guest stays.
      const guest = app.signInCookies.browserOf(request).guest
      if (guest && guest !== (await magicLinkGuest(deps, request.body.token))) throw guestAskedElsewhere()
      const { user, isNewUser, urls } = await signInWithMagicLink(deps, contextOf(request), request.body.token)
      const outcome = await signIn(request, reply, user, 'magic-link', true)
      if (outcome.kind === 'challenge') {
        return { ...twoFactorRedirect(outcome.methods), url: withQuery(urls.callbackURL, { twoFactorRedirect: 'true' }) }
      }
      const url = (isNewUser && urls.newUserCallbackURL) || urls.callbackURL
      return { redirect: true as const, url, token: null, user: toUserJson(user) }
    },
  }
})
