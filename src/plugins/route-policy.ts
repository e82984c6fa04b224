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
import { AppError, type ErrorCode, forbidden, serviceUnavailable, unauthorized } from '../shared/errors.js'
import type { RedirectRules } from '../shared/redirect.js'
import { PUBLIC, type RoutePolicy } from '../shared/route-policy.js'
import { andThen, type MaybePromise } from '../shared/maybe-async.js'
import { emailOf, rateLimited, type Verdict } from './rate-limit.js'

/** Errors that end a password re-check before any password was checked. */
const NOT_CHECKED = new Set<ErrorCode>(['VALIDATION_ERROR', 'INVALID_CALLBACK_URL', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE'])

const POLICY_KEYS = new Set(['access', 'checkOrigin', 'rateLimit', 'reverifiesPassword', 'cacheable'])

const DEFAULT: RoutePolicy = Object.freeze({ access: 'session' })
// An unmatched request is a 404 to everyone; the origin rule still applies.
const NOT_FOUND: RoutePolicy = PUBLIC

declare module 'fastify' {
  interface FastifyContextConfig {
    policy?: RoutePolicy
  }
  interface FastifyRequest {
    /** The route that matched and its policy, set once per request by matchedRoute. */
    matched: MatchedRoute | null
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
  /** The policy when the route was added: the hooks a policy needs beyond onRequest are attached then. */
  readonly registeredPolicy: RoutePolicy | undefined
}

/** What the pipeline needs of the route that matched, worked out once per route. */
export interface MatchedRoute {
  /** The route's pattern ("/api/v1/journal/entries/:id"), or null when no route matched. */
  url: string | null
  policy: RoutePolicy
  /** Under /api/auth/: every method is origin-checked. */
  authRoute: boolean
}

const UNMATCHED: MatchedRoute = Object.freeze({ url: null, policy: NOT_FOUND, authRoute: false })
// Fastify builds a new routeOptions object on every read; its `config` is one object per route.
const byConfig = new WeakMap<object, MatchedRoute>()

/** The matched route's pattern and policy (a route that declares none gets the strict default). */
export function matchedRoute(request: FastifyRequest): MatchedRoute {
  request.matched ??= request.is404 ? UNMATCHED : routeOf(request.routeOptions.config)
  return request.matched
}

function routeOf(config: FastifyRequest['routeOptions']['config']): MatchedRoute {
  let route = byConfig.get(config)
  if (!route) {
    const url = config.url!
    route = Object.freeze({ url, policy: config.policy ?? DEFAULT, authRoute: url.startsWith('/api/auth/') })
    byConfig.set(config, route)
  }
  return route
}

/** A route's budgets that need the parsed body or the signed-in account: counted before its handler. */
const needsBudgetsBeforeHandler = (policy: RoutePolicy | undefined) =>
  Boolean(policy?.rateLimit?.perEmail || policy?.reverifiesPassword)

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
  // Their hooks are attached when the route is added; a policy given later would go unenforced.
  const registered = route.registeredPolicy
  if (
    needsBudgetsBeforeHandler(policy) !== needsBudgetsBeforeHandler(registered) ||
    Boolean(policy.reverifiesPassword) !== Boolean(registered?.reverifiesPassword)
  )
    throw new Error(`Route ${where}: per-email budgets and password re-checks must be declared with the route`)
}

/** A route's own hooks of one kind as an array (Fastify takes one function or several). */
function hooks<H>(given: H | H[] | undefined): H[] {
  if (given === undefined) return []
  return Array.isArray(given) ? given : [given]
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

/**
 * 403 INVALID_ORIGIN naming what was refused and how to allow it: a web app on an origin that was
 * never trusted fails here first, and a bare "not trusted" sent its developer searching.
 */
function untrusted(what: 'Origin' | 'Referer', origin: string | null): AppError {
  const named = origin === null ? `The ${what} header` : `${what} ${origin.slice(0, 200)}`
  return new AppError(
    403,
    'INVALID_ORIGIN',
    `${named} is not a trusted origin: a web app's origin is trusted when it is listed in AUTH_TRUSTED_ORIGIN (comma-separated) or is WEB_ORIGIN`,
    { data: { origin: origin?.slice(0, 200) ?? null } },
  )
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
const ALLOWED_METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS'
const ALLOWED_HEADERS = 'Content-Type, Authorization, X-Request-Id'

export interface RoutePolicyOptions {
  trustedOrigins: readonly string[]
  webOrigin: string
  /** Routes declared for roles also need a session started after a second factor (REQUIRE_ADMIN_TWO_FACTOR). */
  roleRoutesNeedSecondFactor: boolean
  /** True once shutdown began: new requests get 503. */
  closing(): boolean
  /**
   * Looks the request's session up and sets request.user and request.session (and the cookie it
   * renews or clears): the session module's, handed in so this pipeline depends on no domain. A
   * session answered from memory is set before it returns; otherwise it returns a promise.
   */
  loadSession(request: FastifyRequest, reply: FastifyReply): MaybePromise<void>
}

export default fp(
  async function routePolicy(app: FastifyInstance, opts: RoutePolicyOptions) {
    const trusted: ReadonlySet<string> = new Set(opts.trustedOrigins)
    const { loadSession, closing } = opts
    app.decorate('trustedOrigins', trusted)
    app.decorate('redirectRules', { base: opts.webOrigin, trustedOrigins: trusted })
    app.decorateRequest('matched', null)

    const routes: RegisteredRoute[] = []
    app.decorate('registeredRoutes', routes)
    app.addHook('onRoute', (route) => {
      const registeredPolicy = route.config?.policy
      // A snapshot of method and URL: Fastify reuses the options object for a prefix's "/" twin.
      routes.push({
        method: route.method,
        url: route.url,
        get config() {
          return route.config
        },
        registeredPolicy,
      })
      // Only the routes that declare such budgets run hooks for them: every other request skips them.
      if (needsBudgetsBeforeHandler(registeredPolicy)) route.preHandler = [budgetsBeforeHandler, ...hooks(route.preHandler)]
      if (registeredPolicy?.reverifiesPassword) route.onError = [refundUncheckedAttempt, ...hooks(route.onError)]
    })
    // Checked once every plugin has added its routes (and third-party routes got their policy).
    app.addHook('onReady', async () => routes.forEach(checkPolicy))

    /**
     * The origin rule (docs/http-contract.md, "Trusted origins, CSRF and CORS"). Any request to an
     * /api/auth route, and any state-changing request to any route, whose Origin is present and
     * untrusted is refused. Without an Origin, a state-changing request
     * is judged by its Referer, and one that carries a cookie but neither header is refused.
     */
    const checkOrigin = (
      request: FastifyRequest,
      route: MatchedRoute,
      origin: string | undefined,
      originTrusted: boolean,
    ): void => {
      const stateChanging = STATE_CHANGING.has(request.method)
      // The matched route's own path (the route table), not the request line.
      if (!stateChanging && !route.authRoute) return
      if (origin !== undefined) {
        if (origin === 'null') throw new AppError(403, 'MISSING_OR_NULL_ORIGIN', 'Origin is null')
        if (!originTrusted) throw untrusted('Origin', origin)
        return
      }
      // GET navigations are judged by Origin only: the identity provider's redirect carries its own Referer.
      if (!stateChanging) return
      const referer = request.headers.referer
      if (referer !== undefined) {
        const refererOrigin = originOf(referer)
        if (refererOrigin === null || !trusted.has(refererOrigin)) throw untrusted('Referer', refererOrigin)
        return
      }
      // A browser sending cookies always sends Origin or Referer on a POST; a bare cookie is suspect.
      if (request.headers.cookie !== undefined) {
        throw new AppError(403, 'MISSING_OR_NULL_ORIGIN', 'Origin header is required')
      }
    }

    const refuseSpent = (verdict: Verdict): void => {
      if (verdict.exceeded) throw rateLimited(verdict.retryAfter)
    }

    /** The per-IP budgets: the global one unless the route opts out, then the route's own. */
    const countPerIp = (request: FastifyRequest, policy: RoutePolicy): MaybePromise<void> => {
      const limits = policy.rateLimit
      const perIp = limits?.perIp
      const own = () => (perIp ? andThen(app.rateLimits.perIp[perIp](request), refuseSpent) : undefined)
      return limits?.global === false ? own() : andThen(andThen(app.rateLimits.global(request), refuseSpent), own)
    }

    /** Who may call: anyone, a signed-in user, or one with a role (and a second factor if so configured). */
    const checkAccess = (request: FastifyRequest, policy: RoutePolicy): void => {
      const access = policy.access ?? 'session'
      if (access === 'public') return
      if (!request.user) throw unauthorized()
      if (typeof access === 'object' && !access.roles.includes(request.user.role)) {
        throw forbidden(`${access.roles.join(' or ')} role required`)
      }
      if (typeof access === 'object' && opts.roleRoutesNeedSecondFactor && !request.session?.twoFactorVerified) {
        throw new AppError(403, 'TWO_FACTOR_REQUIRED', 'Sign in with two-factor authentication to use this route')
      }
    }

    /**
     * Every request, matched or not, in the order that keeps the cheap refusals first: the headers
     * every answer carries (errors too), shutdown, CORS and origin, the per-IP budgets (a flood never
     * reaches the database), the session, then who may call. Returns a promise only when a step has
     * to wait (a budget kept in Redis, a session not in memory), and 'answered' for a preflight.
     */
    const enforce = (request: FastifyRequest, reply: FastifyReply): MaybePromise<void> | 'answered' => {
      const route = matchedRoute(request)
      const { policy } = route
      reply.header('x-request-id', request.id)
      reply.header('x-content-type-options', 'nosniff')
      // Sessions, credentials and personal data must never sit in a shared or browser cache.
      if (!policy.cacheable) reply.header('cache-control', 'no-store')
      if (closing()) {
        reply.header('connection', 'close')
        throw serviceUnavailable('The service is shutting down', 5)
      }

      const origin = request.headers.origin
      const originTrusted = origin !== undefined && trusted.has(origin)
      if (originTrusted) {
        reply.header('access-control-allow-origin', origin)
        reply.header('access-control-allow-credentials', 'true')
      }
      reply.header('vary', 'Origin')
      if (request.method === 'OPTIONS' && request.headers['access-control-request-method']) {
        if (!originTrusted) throw untrusted('Origin', origin ?? null)
        reply.header('access-control-allow-methods', ALLOWED_METHODS)
        reply.header('access-control-allow-headers', ALLOWED_HEADERS)
        reply.header('access-control-max-age', '600')
        reply.code(204).send()
        return 'answered'
      }
      if (policy.checkOrigin !== false) checkOrigin(request, route, origin, originTrusted)

      return andThen(countPerIp(request, policy), () =>
        // A cacheable answer must never carry a Set-Cookie (a renewed or cleared session cookie).
        andThen(policy.cacheable ? undefined : loadSession(request, reply), () => checkAccess(request, policy)),
      )
    }

    // Callback style: the common request passes every step without a promise. A hook that has
    // answered (a preflight) must not call done: Fastify would go on to the handler.
    app.addHook('onRequest', (request, reply, done) => {
      let outcome: ReturnType<typeof enforce>
      try {
        outcome = enforce(request, reply)
      } catch (err) {
        return done(err as Error)
      }
      if (outcome instanceof Promise) outcome.then(() => done(), done)
      else if (outcome !== 'answered') done()
    })

    // Budgets that need the parsed body or the signed-in account, before the handler does any work.
    async function budgetsBeforeHandler(request: FastifyRequest): Promise<void> {
      const { policy } = matchedRoute(request)
      const perEmail = policy.rateLimit?.perEmail
      if (perEmail && emailOf(request)) refuseSpent(await app.rateLimits.perEmail[perEmail](request))
      if (policy.reverifiesPassword && request.user) {
        // Claimed before the hash is checked, so parallel guesses cannot all slip under the limit,
        // and a right guess past the limit is refused like a wrong one.
        const retryAfter = await app.rateLimits.passwordChecks.take(request.user.id)
        if (retryAfter > 0) throw rateLimited(retryAfter)
        passwordAttempts.add(request)
      }
    }

    // A right answer keeps its claim like a wrong one: refunded right answers let one account keep
    // every hash worker busy. Only an attempt refused before its password was looked at gives it
    // back: invalid input, or the hash admission's or queue's own refusal (nothing was hashed).
    const passwordAttempts = new WeakSet<FastifyRequest>()
    async function refundUncheckedAttempt(request: FastifyRequest, _reply: FastifyReply, error: Error): Promise<void> {
      if (error instanceof AppError && NOT_CHECKED.has(error.code) && passwordAttempts.delete(request)) {
        await app.rateLimits.passwordChecks.refund(request.user!.id)
      }
    }
  },
  { name: 'route-policy', dependencies: ['@fastify/cookie', 'rate-limit'] },
)
