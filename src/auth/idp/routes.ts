// Sign-in through the identity provider (docs/http-contract.md, "Sign-in with the identity
// provider"): start (redirect or JSON for better-auth's client) and the callback. Every callback
// failure is a redirect to the error URL, never a page of ours.
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { PUBLIC } from '../../shared/route-policy.js'
import { recordAudit } from '../../shared/audit.js'
import { contextOf } from '../../shared/context.js'
import { AppError, serviceUnavailable } from '../../shared/errors.js'
import { resolveRedirect, withQuery } from '../../shared/redirect.js'
import { currentUser } from '../guard.js'
import { CallbackUrl } from '../schemas.js'
import { ErrorSchema } from '../../shared/errors.js'
import { signInOrChallenge } from '../two-factor/routes.js'
import { FlowCookie } from './flow-cookie.js'
import { IdentityProvider, IdpError, safeEqual, type AuthorizationRequest, type IdpIdentity } from './oauth.js'
import { linkIdentity, signInWithIdentity, type IdpDeps, type IdpFailureCode } from './service.js'

const tags = ['auth']
const PROVIDER_ERROR = /^[a-z_]{1,64}$/

const callbackFields = {
  callbackURL: CallbackUrl.optional(),
  errorCallbackURL: CallbackUrl.optional(),
  newUserCallbackURL: CallbackUrl.optional(),
}

export default async function idpRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()
  const { webOrigin, baseUrl } = app.config.auth
  const deps: IdpDeps = { db: app.db, clock: app.clock, config: app.config.auth }
  const flowCookie = new FlowCookie(app.config.auth, app.clock)
  // One client per app: it caches the provider's discovery document and keys.
  const { issuer, clientId, clientSecret } = app.config.idp
  const client = clientId
    ? new IdentityProvider({ issuer, clientId, clientSecret, redirectUri: `${baseUrl}/api/auth/callback/idp` })
    : null

  const configured = (): IdentityProvider => {
    if (!client) {
      throw serviceUnavailable(
        'Sign-in with the identity provider is not configured: set IDP_CLIENT_ID and IDP_CLIENT_SECRET ' +
          '(and IDP_ISSUER for a provider other than Google)',
      )
    }
    return client
  }

  // Relative paths are pages of the web front end, where the user started.
  const resolve = (url: string, field: string) => resolveRedirect(url, app.redirectRules, field)

  /** Resolves the client's URLs (no open redirect) and fills in the defaults. */
  const flowUrls = (q: { callbackURL?: string; errorCallbackURL?: string; newUserCallbackURL?: string }) => {
    const callbackURL = resolve(q.callbackURL ?? '/', 'callbackURL')
    return {
      callbackURL,
      errorCallbackURL: resolve(q.errorCallbackURL ?? '/auth/error', 'errorCallbackURL'),
      newUserCallbackURL: q.newUserCallbackURL === undefined ? callbackURL : resolve(q.newUserCallbackURL, 'newUserCallbackURL'),
    }
  }

  const start = async (reply: FastifyReply, q: Parameters<typeof flowUrls>[0], linkUserId?: string): Promise<string> => {
    const urls = flowUrls(q)
    const provider = configured()
    let authorization: AuthorizationRequest
    try {
      authorization = await provider.authorizationRequest()
    } catch (err) {
      if (err instanceof IdpError)
        throw new AppError(502, 'BAD_GATEWAY', 'The identity provider could not be reached', { cause: err })
      throw err
    }
    const { url, ...secrets } = authorization
    flowCookie.set(reply, { ...secrets, ...urls, ...(linkUserId ? { linkUserId } : {}) })
    return url
  }

  const startErrors = { 400: ErrorSchema, 403: ErrorSchema, 502: ErrorSchema, 503: ErrorSchema }

  app.get(
    '/api/auth/sign-in/idp',
    {
      config: { policy: PUBLIC },
      schema: {
        operationId: 'signInIdp',
        tags,
        summary: 'Start sign-in with the identity provider: 302 to its authorization page',
        querystring: z.strictObject(callbackFields),
        response: { 302: z.null().describe('Redirect to the identity provider'), ...startErrors },
      },
    },
    async (request, reply) => reply.redirect(await start(reply, request.query), 302),
  )

  app.post(
    '/api/auth/sign-in/social',
    {
      config: { policy: PUBLIC },
      schema: {
        operationId: 'signInSocial',
        tags,
        summary: "Start sign-in with the identity provider, answering the URL (better-auth's client)",
        body: z.strictObject({
          provider: z.string().min(1).max(64),
          ...callbackFields,
          disableRedirect: z.boolean().optional(),
        }),
        response: { 200: z.object({ url: z.string(), redirect: z.boolean() }), 404: ErrorSchema, ...startErrors },
      },
    },
    async (request, reply) => {
      const { provider, disableRedirect, ...q } = request.body
      if (provider !== 'idp') throw new AppError(404, 'PROVIDER_NOT_FOUND', `Provider "${provider}" is not configured; use "idp"`)
      return { url: await start(reply, q), redirect: !disableRedirect }
    },
  )

  app.post(
    '/api/auth/link-social',
    {
      schema: {
        operationId: 'linkSocialAccount',
        tags,
        summary:
          "Link the identity provider's account to the signed-in user: answers its authorization URL (better-auth's client)",
        body: z.strictObject({
          provider: z.string().min(1).max(64),
          callbackURL: CallbackUrl.optional(),
          errorCallbackURL: CallbackUrl.optional(),
          disableRedirect: z.boolean().optional(),
        }),
        response: {
          200: z.object({ url: z.string(), redirect: z.boolean() }),
          401: ErrorSchema,
          404: ErrorSchema,
          ...startErrors,
        },
      },
    },
    async (request, reply) => {
      const { provider, disableRedirect, ...q } = request.body
      if (provider !== 'idp') throw new AppError(404, 'PROVIDER_NOT_FOUND', `Provider "${provider}" is not configured; use "idp"`)
      return { url: await start(reply, q, currentUser(request).id), redirect: !disableRedirect }
    },
  )

  app.get(
    '/api/auth/callback/idp',
    {
      config: { policy: PUBLIC },
      schema: {
        operationId: 'callbackIdp',
        tags,
        summary: 'Where the identity provider sends the browser back; 302 to the callback or error URL',
        // Not strict: providers add their own parameters (scope, authuser, session_state, ...).
        querystring: z.looseObject({
          code: z.string().max(4096).optional(),
          state: z.string().max(1024).optional(),
          error: z.string().max(256).optional(),
          iss: z.string().max(2048).optional(),
        }),
        response: {
          302: z
            .null()
            .describe(
              'To callbackURL (or newUserCallbackURL) with the session cookie; with two-factor on, to ' +
                '{web_origin}/two-factor?callbackURL= with the two_factor cookie; or to the error URL with ?error=',
            ),
          503: ErrorSchema,
        },
      },
    },
    async (request, reply) => {
      const provider = configured()
      const flow = flowCookie.take(request, reply)
      const fail = async (code: IdpFailureCode | string, why: string, errorUrl = `${webOrigin}/auth/error`) => {
        request.log.info({ error: code, why }, 'identity provider sign-in failed')
        await recordAudit(app.db, { actorId: null, action: 'auth.idp.sign_in_failed', ip: request.ip, details: { error: code } })
        return reply.redirect(withQuery(errorUrl, { error: code }), 302)
      }
      const { code, state, error, iss } = request.query
      if (!flow) return fail('state_mismatch', 'no valid flow cookie')
      // Judged again, not trusted because the cookie is signed: a cookie from before a change of
      // trusted origins (or of these rules) must not redirect anywhere they no longer allow.
      let urls: ReturnType<typeof flowUrls>
      try {
        urls = flowUrls(flow)
      } catch {
        return fail('state_mismatch', 'flow cookie holds an untrusted URL')
      }
      const onError = (c: IdpFailureCode | string, why: string) => fail(c, why, urls.errorCallbackURL)
      if (app.clock.now().getTime() > flow.expiresAt) return onError('state_mismatch', 'flow expired')
      // Constant time: the state is the CSRF token of the whole flow.
      if (!state || !safeEqual(state, flow.state)) return onError('state_mismatch', 'state does not match the flow')
      // RFC 9207: an `iss` naming another issuer means a mix-up between providers.
      if (iss !== undefined && iss !== app.config.idp.issuer) return onError('issuer_mismatch', 'iss parameter is another issuer')
      if (error !== undefined) return onError(PROVIDER_ERROR.test(error) ? error : 'provider_error', 'provider answered an error')
      if (!code) return onError('invalid_code', 'no code')

      let identity: IdpIdentity
      try {
        identity = await provider.exchange(code, flow.codeVerifier, flow.nonce, app.clock.now())
      } catch (err) {
        if (err instanceof IdpError) return onError(err.code, err.message)
        throw err
      }
      if (flow.linkUserId !== undefined) {
        // Linking needs the very user who started it still signed in in this browser.
        if (request.user?.id !== flow.linkUserId) return onError('unable_to_link_account', 'not signed in as the linking user')
        const linked = await linkIdentity(deps, contextOf(request), flow.linkUserId, identity)
        if (!linked.ok) return onError(linked.error, 'link rules')
        return reply.redirect(urls.callbackURL, 302)
      }
      const outcome = await signInWithIdentity(deps, contextOf(request), identity)
      if (!outcome.ok) return onError(outcome.error, 'account rules')
      const user = { id: outcome.userId, twoFactorEnabled: outcome.twoFactorEnabled, credentialEpoch: outcome.credentialEpoch }
      try {
        if ((await signInOrChallenge(app, request, reply, user, true)) === 'two-factor') {
          // No session yet: the web app's two-factor page asks for the code (the `two_factor` cookie is
          // set), then sends the browser on to where the sign-in was going.
          const page = new URL('/two-factor', webOrigin)
          page.searchParams.set('callbackURL', urls.callbackURL)
          return reply.redirect(page.toString(), 302)
        }
      } catch (err) {
        // A ban that landed after the account rules passed: the browser still goes to the error URL.
        if (err instanceof AppError && err.code === 'BANNED_USER') return onError(err.code, 'banned meanwhile')
        throw err
      }
      return reply.redirect(outcome.isNewUser ? urls.newUserCallbackURL : urls.callbackURL, 302)
    },
  )
}
