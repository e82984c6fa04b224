// Sign-in through the identity provider (docs/http-contract.md, "Sign-in with the identity
// provider"): start (redirect or JSON for better-auth's client) and the callback. Every callback
// failure is a redirect to the error URL, never a page of ours.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { z } from 'zod'
import { addsAWayIn, PUBLIC, PUBLIC_ACTS_ON_GET } from '../../shared/route-policy.js'
import { contextOf } from '../../shared/context.js'
import { AppError, serviceUnavailable } from '../../shared/errors.js'
import { resolveRedirect, withQuery } from '../../shared/redirect.js'
import { currentUser } from '../../user/signed-in.js'
import { CallbackUrl } from '../core/schemas.js'
import { completeCallback } from '../idp/callback.js'
import { FlowCookie } from '../idp/flow-cookie.js'
import { IdentityProvider, IdpError, type AuthorizationRequest } from '../idp/oauth.js'
import type { IdpDeps } from '../idp/service.js'
import { signInDepsOf } from '../sign-in/step.js'
import { declareRoutes, serveRoutes } from './serve.js'

const callbackFields = {
  callbackURL: CallbackUrl.optional(),
  errorCallbackURL: CallbackUrl.optional(),
  newUserCallbackURL: CallbackUrl.optional(),
}
/** What starting a flow may fail with: a hostile redirect, a cross-site call, the provider unreachable or not configured. */
const startErrors = [400, 403, 502, 503]
const Started = z.object({ url: z.string(), redirect: z.boolean() })

export const idpRoutes = declareRoutes({
  signInIdp: {
    method: 'GET',
    path: '/api/auth/sign-in/idp',
    policy: PUBLIC,
    summary: 'Start sign-in with the identity provider: 302 to its authorization page',
    query: z.strictObject(callbackFields),
    response: { 302: z.null().describe('Redirect to the identity provider') },
    errors: startErrors,
  },
  signInSocial: {
    method: 'POST',
    path: '/api/auth/sign-in/social',
    policy: PUBLIC,
    summary: "Start sign-in with the identity provider, answering the URL (better-auth's client)",
    body: z.strictObject({
      provider: z.string().min(1).max(64),
      ...callbackFields,
      disableRedirect: z.boolean().optional(),
    }),
    response: { 200: Started },
    errors: [404, ...startErrors],
  },
  linkSocialAccount: {
    method: 'POST',
    path: '/api/auth/link-social',
    policy: addsAWayIn(),
    summary: "Link the identity provider's account to the signed-in user: answers its authorization URL (better-auth's client)",
    body: z.strictObject({
      provider: z.string().min(1).max(64),
      callbackURL: CallbackUrl.optional(),
      errorCallbackURL: CallbackUrl.optional(),
      disableRedirect: z.boolean().optional(),
    }),
    response: { 200: Started },
    errors: [401, 404, ...startErrors],
  },
  callbackIdp: {
    method: 'GET',
    path: '/api/auth/callback/idp',
    policy: PUBLIC_ACTS_ON_GET,
    summary: 'Where the identity provider sends the browser back; 302 to the callback or error URL',
    // Not strict: providers add their own parameters (scope, authuser, session_state, ...).
    query: z.looseObject({
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
    },
    errors: [503],
  },
})

export default serveRoutes(idpRoutes, (app) => {
  const { webOrigin, baseUrl } = app.config.auth
  const deps: IdpDeps = { db: app.db, clock: app.clock, config: app.config.auth, notices: app.securityNotices }
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

  const start = async (
    request: FastifyRequest,
    reply: FastifyReply,
    q: Parameters<typeof flowUrls>[0],
    linkUserId?: string,
  ): Promise<string> => {
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
    const { guest } = app.signInCookies.browserOf(request)
    flowCookie.set(reply, { ...secrets, ...urls, ...(linkUserId ? { linkUserId } : {}), ...(guest ? { guest } : {}) })
    return url
  }

  /** A provider other than ours: better-auth's 404. */
  const ours = (provider: string) => {
    if (provider !== 'idp') throw new AppError(404, 'PROVIDER_NOT_FOUND', `Provider "${provider}" is not configured; use "idp"`)
  }

  return {
    signInIdp: async (request, reply) => reply.redirect(await start(request, reply, request.query), 302),
    signInSocial: async (request, reply) => {
      const { provider, disableRedirect, ...q } = request.body
      ours(provider)
      return { url: await start(request, reply, q), redirect: !disableRedirect }
    },
    linkSocialAccount: async (request, reply) => {
      const { provider, disableRedirect, ...q } = request.body
      ours(provider)
      return { url: await start(request, reply, q, currentUser(request).id), redirect: !disableRedirect }
    },
    callbackIdp: async (request, reply) => {
      const provider = configured()
      const result = await completeCallback(
        { ...deps, ...signInDepsOf(app), provider, issuer: app.config.idp.issuer, webOrigin },
        { ...contextOf(request), userId: request.user?.id ?? null },
        {
          flow: flowCookie.take(request, reply),
          query: request.query,
          browser: app.signInCookies.browserOf(request),
          urlsOf: flowUrls,
        },
      )
      if (result.kind === 'failed') {
        request.log.info({ error: result.error, why: result.why }, 'identity provider sign-in failed')
        return reply.redirect(withQuery(result.errorUrl, { error: result.error }), 302)
      }
      if (result.kind === 'signed-in') app.signInCookies.set(request, reply, result.outcome)
      return reply.redirect(result.to, 302)
    },
  }
})
