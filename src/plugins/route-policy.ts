// Route policy: each route declares in its options (`config.policy`) who may call it, whether it is
// exempt from the origin rule, its rate-limit budgets and whether it re-verifies a password. The
// hooks below read the policy of the route that MATCHED (`request.routeOptions`), never the request
// line: the router decodes "/%61pi/v1/..." to "/api/v1/...", so any decision taken on the raw URL
// can be dodged by spelling the path differently. A route that declares nothing gets the strict
// default: a session is required and state-changing methods are origin-checked.
//
// Also here: trusted origins, the CSRF rule and CORS by hand (no CORS plugin).
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { AppError, forbidden, unauthorized } from '../shared/errors.js'
import type { RedirectRules } from '../shared/redirect.js'
import { PUBLIC, type RoutePolicy } from '../shared/route-policy.js'
import { emailOf, rateLimited } from './rate-limit.js'

const POLICY_KEYS = new Set(['access', 'checkOrigin', 'rateLimit', 'reverifiesPassword', 'cacheable'])

const DEFAULT: RoutePolicy = Object.freeze({ access: 'session' })
// An unmatched request is a 404 to everyone; the origin rule still applies.
const NOT_FOUND: RoutePolicy = PUBLIC

declare module 'fastify' {
  interface FastifyContextConfig {
    policy?: RoutePolicy
  }
  interface FastifyRequest {
    /** The matched route's policy, read once per request by policyOf. */
    policy: RoutePolicy | null
  }
  interface FastifyInstance {
    trustedOrigins: ReadonlySet<string>
    /** Where client-supplied redirect targets may lead (redirect.ts). */
    redirectRules: RedirectRules
    /** Every route registered, as Fastify's onRoute hook saw it (policy check at start, route-walking tests). */
    registeredRoutes: readonly RegisteredRoute[]
  }
}

export interface RegisteredRoute {
  method: RouteOptions['method']
  url: string
  /** As it stands once every onRoute hook ran (a scope may set the policy after this one saw it). */
  readonly config: RouteOptions['config']
}

export function policyOf(request: FastifyRequest): RoutePolicy {
  // Kept on the request: every hook asks, and Fastify builds a new routeOptions object per read.
  request.policy ??= request.is404 ? NOT_FOUND : (request.routeOptions.config.policy ?? DEFAULT)
  return request.policy
}

/** Throws at start-up for a policy that cannot be right: a typo must not fall back to a default. */
function checkPolicy(route: RegisteredRoute): void {
  const policy = route.config?.policy
  if (policy === undefined) return
  const where = `${String(route.method)} ${route.url}`
  for (const key of Object.keys(policy)) {
    if (!POLICY_KEYS.has(key)) throw new Error(`Route ${where}: unknown policy key "${key}"`)
  }
  const isPublic = policy.access === 'public'
  if (policy.checkOrigin === false && !isPublic) throw new Error(`Route ${where}: only a public route may skip the origin check`)
  if (policy.reverifiesPassword && isPublic) throw new Error(`Route ${where}: a public route has no password to re-verify`)
  if (policy.cacheable && !isPublic) throw new Error(`Route ${where}: a cacheable route must be public (it sees no session)`)
  if (typeof policy.access === 'object' && policy.access.roles.length === 0)
    throw new Error(`Route ${where}: no role may call it`)
}

export function originOf(value: string | undefined): string | null {
  if (!value) return null
  try {
    const url = new URL(value)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : null
  } catch {
    return null
  }
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
const ALLOWED_METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS'
const ALLOWED_HEADERS = 'Content-Type, Authorization, X-Request-Id'

export interface RoutePolicyOptions {
  trustedOrigins: readonly string[]
  webOrigin: string
  /** Routes declared for roles also need a session started after a second factor (REQUIRE_ADMIN_TWO_FACTOR). */
  roleRoutesNeedSecondFactor: boolean
  /**
   * Looks the request's session up and sets request.user and request.session (and the cookie it
   * renews or clears): the session module's, handed in so this pipeline depends on no domain.
   */
  loadSession(request: FastifyRequest, reply: FastifyReply): Promise<void>
}

export default fp(
  async function routePolicy(app: FastifyInstance, opts: RoutePolicyOptions) {
    const trusted: ReadonlySet<string> = new Set(opts.trustedOrigins)
    const { loadSession } = opts
    app.decorate('trustedOrigins', trusted)
    app.decorate('redirectRules', { base: opts.webOrigin, trustedOrigins: trusted })
    app.decorateRequest('policy', null)

    const routes: RegisteredRoute[] = []
    app.decorate('registeredRoutes', routes)
    app.addHook('onRoute', (route) => {
      // A snapshot of method and URL: Fastify reuses the options object for a prefix's "/" twin.
      routes.push({
        method: route.method,
        url: route.url,
        get config() {
          return route.config
        },
      })
    })
    // Checked once every plugin has added its routes (and third-party routes got their policy).
    app.addHook('onReady', async () => routes.forEach(checkPolicy))

    /**
     * The origin rule (docs/http-contract.md, "Trusted origins, CSRF and CORS"). Any request to an
     * /api/auth route, and any state-changing request to any route, whose Origin is present and
     * untrusted is refused. Without an Origin, a state-changing request
     * is judged by its Referer, and one that carries a cookie but neither header is refused.
     */
    const checkOrigin = (request: FastifyRequest, origin: string | undefined, originTrusted: boolean): void => {
      const stateChanging = STATE_CHANGING.has(request.method)
      // The matched route's own path (the route table), not the request line.
      const authRoute = !request.is404 && request.routeOptions.url!.startsWith('/api/auth/')
      if (!stateChanging && !authRoute) return
      if (origin !== undefined) {
        if (origin === 'null') throw new AppError(403, 'MISSING_OR_NULL_ORIGIN', 'Origin is null')
        if (!originTrusted) throw new AppError(403, 'INVALID_ORIGIN', 'Origin is not trusted')
        return
      }
      // GET navigations are judged by Origin only: the identity provider's redirect carries its own Referer.
      if (!stateChanging) return
      const referer = request.headers.referer
      if (referer !== undefined) {
        const refererOrigin = originOf(referer)
        if (refererOrigin === null || !trusted.has(refererOrigin)) {
          throw new AppError(403, 'INVALID_ORIGIN', 'Referer is not a trusted origin')
        }
        return
      }
      // A browser sending cookies always sends Origin or Referer on a POST; a bare cookie is suspect.
      if (request.headers.cookie !== undefined) {
        throw new AppError(403, 'MISSING_OR_NULL_ORIGIN', 'Origin header is required')
      }
    }

    // One hook, in the order that keeps the cheap refusals first: CORS and origin, the per-IP
    // budgets (a flood never reaches the database), the session, then who may call.
    app.addHook('onRequest', async (request, reply) => {
      const policy = policyOf(request)
      const origin = request.headers.origin
      const originTrusted = origin !== undefined && trusted.has(origin)
      if (originTrusted) {
        reply.header('access-control-allow-origin', origin)
        reply.header('access-control-allow-credentials', 'true')
      }
      reply.header('vary', 'Origin')
      if (request.method === 'OPTIONS' && request.headers['access-control-request-method']) {
        if (!originTrusted) throw new AppError(403, 'INVALID_ORIGIN', 'Origin is not trusted')
        reply.header('access-control-allow-methods', ALLOWED_METHODS)
        reply.header('access-control-allow-headers', ALLOWED_HEADERS)
        reply.header('access-control-max-age', '600')
        return reply.code(204).send()
      }
      if (policy.checkOrigin !== false) checkOrigin(request, origin, originTrusted)

      const limits = policy.rateLimit
      if (limits?.global !== false) {
        const { exceeded, retryAfter } = await app.rateLimits.global(request)
        if (exceeded) throw rateLimited(retryAfter)
      }
      if (limits?.perIp) {
        const { exceeded, retryAfter } = await app.rateLimits.perIp[limits.perIp](request)
        if (exceeded) throw rateLimited(retryAfter)
      }

      // A cacheable answer must never carry a Set-Cookie (a renewed or cleared session cookie).
      if (!policy.cacheable) await loadSession(request, reply)

      const access = policy.access ?? 'session'
      if (access === 'public') return
      if (!request.user) throw unauthorized()
      if (typeof access === 'object' && !access.roles.includes(request.user.role)) {
        throw forbidden(`${access.roles.join(' or ')} role required`)
      }
      if (typeof access === 'object' && opts.roleRoutesNeedSecondFactor && !request.session?.twoFactorVerified) {
        throw new AppError(403, 'TWO_FACTOR_REQUIRED', 'Sign in with two-factor authentication to use this route')
      }
    })

    // Budgets that need the parsed body or the signed-in account, before the handler does any work.
    // Most routes declare neither: they pass without a promise.
    const budgetsBeforeHandler = async (request: FastifyRequest, policy: RoutePolicy): Promise<void> => {
      const perEmail = policy.rateLimit?.perEmail
      if (perEmail && emailOf(request)) {
        const { exceeded, retryAfter } = await app.rateLimits.perEmail[perEmail](request)
        if (exceeded) throw rateLimited(retryAfter)
      }
      if (policy.reverifiesPassword && request.user) {
        // Claimed before the hash is checked, so parallel guesses cannot all slip under the limit,
        // and a right guess past the limit is refused like a wrong one.
        const retryAfter = await app.rateLimits.passwordChecks.take(request.user.id)
        if (retryAfter > 0) throw rateLimited(retryAfter)
        passwordAttempts.set(request, 'claimed')
      }
    }
    app.addHook('preHandler', (request, _reply, done) => {
      const policy = policyOf(request)
      if (!policy.rateLimit?.perEmail && !policy.reverifiesPassword) return done()
      budgetsBeforeHandler(request, policy).then(() => done(), done)
    })

    // Only a wrong answer to "your current password" keeps its claim; any other outcome (right
    // answer, a full hash queue, a bug) gives the attempt back.
    const passwordAttempts = new WeakMap<FastifyRequest, 'claimed' | 'wrong'>()
    app.addHook('onError', async (request, _reply, error) => {
      if (error instanceof AppError && error.code === 'INVALID_PASSWORD' && passwordAttempts.has(request)) {
        passwordAttempts.set(request, 'wrong')
      }
    })
    app.addHook('onResponse', (request, _reply, done) => {
      if (passwordAttempts.get(request) !== 'claimed') return done()
      app.rateLimits.passwordChecks.refund(request.user!.id).then(() => done(), done)
    })
  },
  { name: 'route-policy', dependencies: ['@fastify/cookie', 'rate-limit'] },
)
