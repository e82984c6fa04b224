// Sign-in by a code sent to a phone number, in better-auth 1.6's phoneNumber plugin's names and JSON
// shapes so its `phoneNumberClient()` works unchanged: send-otp, then verify (which signs in, or with
// updatePhoneNumber attaches the number to the account signed in). Only when PHONE_SIGN_IN is on:
// off, the routes are not registered (404). The rules are in phone/service.ts.
import { z } from 'zod'
import { contextOf } from '../../shared/context.js'
import { forbidden, unauthorized } from '../../shared/errors.js'
import { addsAWayIn, SIGN_IN_WITH_CODE } from '../../shared/route-policy.js'
import type { UserWithFlags } from '../../user/types.js'
import { toUserJson, TwoFactorRedirectSchema, twoFactorRedirect, UserSchema } from '../core/schemas.js'
import { CodeStore } from '../links/codes.js'
import { phoneSender } from '../phone/sender.js'
import {
  attachNumber,
  e164,
  PHONE_METHOD,
  type PhoneDeps,
  phoneOf,
  sendPhoneCode,
  signInWithPhoneCode,
} from '../phone/service.js'
import { afterFirstFactor, signInDepsOf } from '../sign-in/step.js'
import { mailing, mailsAfterReply } from './mail-route.js'
import { Otp } from './mailbox.js'
import { declareRoutes, type RouteFamily, serveRoutes } from './serve.js'

/** As better-auth takes it; checked as E.164 by the handler, which answers INVALID_PHONE_NUMBER as better-auth does. */
const GivenNumber = z.string().max(32)
/** better-auth's user with the plugin's two fields. */
const PhoneUserSchema = UserSchema.extend({ phoneNumber: z.string().nullable(), phoneNumberVerified: z.boolean() })

export const phoneRoutes = declareRoutes({
  sendPhoneNumberOTP: mailing({
    path: '/api/auth/phone-number/send-otp',
    // As a route that mails a code: per IP like a sign-in, per number and client, and the daily caps.
    policy: { access: 'public', rateLimit: { perIp: 'signIn', perEmail: 'codeMail' } },
    summary:
      "Send a six-digit code (5 min, 3 tries) to a phone number: to an account's verified number, or to attach it to the account signed in; the same answer either way",
    body: z.strictObject({ phoneNumber: GivenNumber }),
    answer: z.object({ message: z.literal('code sent') }),
  }),
  verifyPhoneNumber: {
    method: 'POST',
    path: '/api/auth/phone-number/verify',
    // With updatePhoneNumber it attaches the number: refused in support mode, a sign-in by phone with it.
    policy: addsAWayIn(SIGN_IN_WITH_CODE),
    summary:
      "Sign in with the code sent to a verified number (with two-factor on, the second step is asked for as after a password); with updatePhoneNumber, in a fresh session, make the number the account's",
    body: z.strictObject({
      phoneNumber: GivenNumber,
      code: Otp,
      disableSession: z.boolean().optional(),
      updatePhoneNumber: z.boolean().optional(),
    }),
    response: {
      200: z.union([
        z.object({ status: z.literal(true), token: z.null(), user: PhoneUserSchema.nullable() }),
        TwoFactorRedirectSchema,
      ]),
    },
    errors: [400, 401, 403],
  },
})

const served = serveRoutes(phoneRoutes, (app) => {
  const deps: PhoneDeps = {
    db: app.db,
    clock: app.clock,
    codes: new CodeStore(app.config.auth.secrets[0]!),
    sender: phoneSender(app.config.auth.phone.sender, app.log),
  }
  const signInDeps = signInDepsOf(app)
  const answer = async (user: UserWithFlags) => ({
    status: true as const,
    token: null,
    user: { ...toUserJson(user), ...(await phoneOf(app.db, user.id)) },
  })

  return {
    sendPhoneNumberOTP: mailsAfterReply(app, { message: 'code sent' as const }, (body: { phoneNumber: string }, request) => {
      const phoneNumber = e164(body.phoneNumber)
      // A guest is signed out here: anyone makes one with a request, and a number is no guest's way in.
      const member = request.user?.isAnonymous ? null : (request.user?.id ?? null)
      return { what: 'phone code', mail: () => sendPhoneCode(deps, phoneNumber, member) }
    }),
    verifyPhoneNumber: async (request, reply) => {
      const { code, disableSession = false, updatePhoneNumber = false } = request.body
      const phoneNumber = e164(request.body.phoneNumber)
      const ctx = contextOf(request)
      if (updatePhoneNumber) {
        if (!request.user || !request.session) throw unauthorized()
        if (request.user.isAnonymous) throw forbidden('Guests cannot use this: sign up or sign in first')
        const session = { userId: request.user.id, createdAt: request.session.createdAt }
        return answer(await attachNumber(deps, ctx, session, { phoneNumber, code }))
      }
      const user = await signInWithPhoneCode(deps, ctx, { phoneNumber, code })
      // The code is spent and proved the number; nothing more was asked for.
      if (disableSession) return { status: true as const, token: null, user: null }
      const outcome = await afterFirstFactor(signInDeps, ctx, {
        user,
        method: PHONE_METHOD,
        rememberMe: true,
        browser: app.signInCookies.browserOf(request),
      })
      app.signInCookies.set(request, reply, outcome)
      if (outcome.kind === 'challenge') return twoFactorRedirect(outcome.methods)
      return answer(user)
    },
  }
})

/** Registered only when PHONE_SIGN_IN is on (src/config.ts); its declarations are read either way. */
export default Object.assign(
  async function phone(app: Parameters<RouteFamily>[0]) {
    if (app.config.auth.phone.signIn) await served(app)
  },
  { declared: served.declared },
) satisfies RouteFamily
