// Route policy: each route declares in its options (`config.policy`) who may call it, whether it is
// exempt from the origin rule, its rate-limit budgets and whether it re-verifies a password. The
// hooks below read the policy of the route that MATCHED (`request.routeOptions`), never the request
// line: the router decodes "/%61pi/v1/..." to "/api/v1/...", so any decision taken on the raw URL
// can be dodged by spelling the path differently. A route that declares nothing gets the strict
// default: a session is required and state-changing methods are origin-checked.
//
// The onRequest hook is the list of named steps in `ON_REQUEST` order (the origin steps are in
// origins.ts); the budgets that need the parsed body or the account run as preHandlers of the
// routes that declare them.
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { AppError, type ErrorCode, forbidden, serviceUnavailable, unauthorized } from '../shared/errors.js'
import { andThen, type MaybePromise } from '../shared/maybe-async.js'
import type { RedirectRules } from '../shared/redirect.js'
import { PUBLIC, type RoutePolicy } from '../shared/route-policy.js'
import { answerCors, checkOrigin, RefusedOrigins, refuseCrossSite } from './origins.js'
import { type Asker, clientAndAddress, clientKey, emailOf, type RateLimits } from './rate-limit.js'
import type { Take } from './budget-counter.js'

/** Errors that end a password re-check before any password was checked. */
const NOT_CHECKED = new Set<ErrorCode>(['VALIDATION_ERROR', 'INVALID_CALLBACK_URL', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE'])

const POLICY_KEYS = new Set([
  'access',
  'checkOrigin',
  'rateLimit',
  'reverifiesPassword',
  'cacheable',
  'refusesCrossSite',
  'guests',
  'actsOnGet',
  'whileImpersonating',
])

const DEFAULT: RoutePolicy = Object.freeze({ access: 'session' })
// An unmatched request is a 404 to everyone; the origin rule still applies.
const NOT_FOUND: RoutePolicy = PUBLIC

declare module 'fastify' {
  interface FastifyContextConfig {
    policy?: RoutePolicy
    /** On an oRPC procedure's route: whether the procedure is declared GET (a read), whatever method carries it. */
    procedureReads?: boolean
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
  /**
   * Whether a call changes state (support mode refuses it): 'by-method' for a plain route (any
   * method but GET, HEAD and OPTIONS), 'always' for a GET that acts or a procedure declared with
   * another method, 'never' for a procedure declared GET (RPCLink may carry it by POST).
   */
  acts: 'by-method' | 'always' | 'never'
}

const UNMATCHED: MatchedRoute = Object.freeze({ url: null, policy: NOT_FOUND, authRoute: false, acts: 'by-method' })
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
    const policy = config.policy ?? DEFAULT
    const acts =
      config.procedureReads !== undefined
        ? config.procedureReads
          ? 'never'
          : 'always'
        : policy.actsOnGet
          ? 'always'
          : 'by-method'
    route = Object.freeze({ url, policy, authRoute: url.startsWith('/api/auth/'), acts })
    byConfig.set(config, route)
  }
  return route
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
  if (policy.refusesCrossSite && policy.checkOrigin === false)
    throw new Error(`Route ${where}: a route that refuses cross-site requests cannot skip the origin check`)
  if (typeof policy.access === 'object' && policy.access.roles.length === 0)
    throw new Error(`Route ${where}: no role may call it`)
  if (policy.guests && policy.access !== undefined && policy.access !== 'session')
    throw new Error(`Route ${where}: guests are let in only where any session may call`)
  if (policy.actsOnGet && policy.whileImpersonating === 'allowed')
    throw new Error(`Route ${where}: a route that acts cannot be allowed in support mode`)
  // Their hooks are attached when the route is added; a policy given later would go unenforced.
  const registered = route.registeredPolicy
  if (
    Boolean(policy.rateLimit?.perEmail) !== Boolean(registered?.rateLimit?.perEmail) ||
    Boolean(policy.reverifiesPassword) !== Boolean(registered?.reverifiesPassword)
  )
    throw new Error(`Route ${where}: per-email budgets and password re-checks must be declared with the route`)
}

/** A route's own hooks of one kind as an array (Fastify takes one function or several). */
function hooks<H>(given: H | H[] | undefined): H[] {
  if (given === undefined) return []
  return Array.isArray(given) ? given : [given]
}

export interface RoutePolicyOptions {
  trustedOrigins: readonly string[]
  webOrigin: string
  /** Routes declared for roles also need a session started after a second factor (REQUIRE_ADMIN_TWO_FACTOR). */
  roleRoutesNeedSecondFactor: boolean
  /** IMPERSONATION_ALLOWS_WRITES: an administrator's impersonation may change state (off: support mode is read-only). */
  impersonationAllowsWrites: boolean
  /** True once shutdown began: new requests get 503. */
  closing(): boolean
  /**
   * Looks the request's session up and sets request.user and request.session (and the cookie it
   * renews or clears): the session module's, handed in so this pipeline depends on no domain. A
   * session answered from memory is set before it returns; otherwise it returns a promise.
   */
  loadSession(request: FastifyRequest, reply: FastifyReply): MaybePromise<void>
}

/**
 * One step of the onRequest hook: returns when the request may go on, throws to refuse it, or
 * answers it itself ('answered', a preflight). A step that has to wait (a budget kept in Redis, a
 * session not in memory) returns a promise; the others return at once, so the common request passes
 * every step without one.
 */
type Step = (request: FastifyRequest, reply: FastifyReply, route: MatchedRoute) => MaybePromise<void> | 'answered'

/** Runs `steps` from `from` in order, waiting only for a step that returned a promise. */
function runSteps(
  steps: readonly Step[],
  request: FastifyRequest,
  reply: FastifyReply,
  route: MatchedRoute,
  from = 0,
): MaybePromise<undefined | 'answered'> {
  for (let i = from; i < steps.length; i++) {
    const outcome = steps[i]!(request, reply, route)
    if (outcome === 'answered') return outcome
    if (outcome instanceof Promise) return outcome.then(() => runSteps(steps, request, reply, route, i + 1))
  }
  return undefined
}

/** The headers every answer carries, errors included. */
function sendCommonHeaders(request: FastifyRequest, reply: FastifyReply, route: MatchedRoute): void {
  reply.header('x-request-id', request.id)
  reply.header('x-content-type-options', 'nosniff')
  // Sessions, credentials and personal data must never sit in a shared or browser cache.
  if (!route.policy.cacheable) reply.header('cache-control', 'no-store')
}

/** 503 to every request once shutdown began, closing its connection after the answer. */
const refuseWhileClosing =
  (closing: () => boolean): Step =>
  (_request, reply) => {
    if (!closing()) return
    reply.header('connection', 'close')
    throw serviceUnavailable('The service is shutting down', 5)
  }

/** The per-IP budgets, before any database work: the global one unless the route opts out, then the route's own. */
const takeIpBudgets =
  (budgets: RateLimits): Step =>
  (request, _reply, { policy }) => {
    const key = clientKey(request.ip)
    const own = policy.rateLimit?.perIp
    const takeOwn = () => (own ? budgets.perIp[own].spend(key) : undefined)
    return policy.rateLimit?.global === false ? takeOwn() : andThen(budgets.global.spend(key), takeOwn)
  }

/** request.user and request.session; never on a cacheable route, whose answer must carry no Set-Cookie. */
const loadSessionOf =
  (loadSession: RoutePolicyOptions['loadSession']): Step =>
  (request, reply, { policy }) =>
    policy.cacheable ? undefined : loadSession(request, reply)

/** Who may call: anyone, a signed-in user, or one with a role (and a second factor if so configured). */
const checkAccess =
  (roleRoutesNeedSecondFactor: boolean): Step =>
  (request, _reply, { policy }) => {
    const access = policy.access ?? 'session'
    if (access === 'public') return
    if (!request.user) throw unauthorized()
    // A guest has proven nothing (no address, no password): it gets only what the route lets guests do.
    if (request.user.isAnonymous && !policy.guests) throw forbidden('Guests cannot use this: sign up or sign in first')
    if (typeof access === 'object' && !access.roles.includes(request.user.role)) {
      throw access.refusal
        ? new AppError(403, access.refusal.code, access.refusal.message)
        : forbidden(`${access.roles.join(' or ')} role required`)
    }
    if (typeof access === 'object' && roleRoutesNeedSecondFactor && !request.session?.twoFactorVerified) {
      throw new AppError(403, 'TWO_FACTOR_REQUIRED', 'Sign in with two-factor authentication to use this route')
    }
  }

const READS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * Support mode is read-only: a session an administrator opened as a member (impersonation) reads
 * what the member reads, and changes nothing in their name (a password, an address, a payment, a
 * journal entry), on any route, public ones included, unless IMPERSONATION_ALLOWS_WRITES is set.
 * Nor does it take anything away: a read declared `whileImpersonating: 'refused'` (the whole data
 * export, a token) is refused whatever IMPERSONATION_ALLOWS_WRITES says. Decided here, on the
 * matched route, so that no route can forget it.
 */
const refuseWritesWhileImpersonating =
  (allowWrites: boolean): Step =>
  (request, _reply, { policy, acts }) => {
    if (!request.session?.impersonatedBy || policy.whileImpersonating === 'allowed') return
    if (policy.whileImpersonating === 'refused')
      throw new AppError(
        403,
        'IMPERSONATION_REFUSED',
        "Support mode shows the member's account; it hands out no copy of their data and no token",
      )
    if (allowWrites) return
    if (acts === 'never' || (acts === 'by-method' && READS.has(request.method))) return
    throw new AppError(403, 'IMPERSONATION_READ_ONLY', 'Support mode is read-only: stop impersonating to make changes')
  }

export default fp(
  async function routePolicy(app: FastifyInstance, opts: RoutePolicyOptions) {
    const trusted: ReadonlySet<string> = new Set(opts.trustedOrigins)
    const budgets = app.rateLimits
    app.decorate('trustedOrigins', trusted)
    app.decorate('redirectRules', { base: opts.webOrigin, trustedOrigins: trusted })
    app.decorateRequest('matched', null)
    const refusedOrigins = new RefusedOrigins(() => app.clock.now().getTime())

    /**
     * Every request, matched or not, in the order that keeps the cheap refusals first: a flood is
     * refused by its budget before it reaches the database.
     */
    const ON_REQUEST: readonly Step[] = [
      sendCommonHeaders,
      refuseWhileClosing(opts.closing),
      answerCors(trusted, refusedOrigins),
      checkOrigin(trusted, refusedOrigins),
      refuseCrossSite(trusted),
      takeIpBudgets(budgets),
      loadSessionOf(opts.loadSession),
      // Before the access rule: every change is refused alike, a route for another role included.
      refuseWritesWhileImpersonating(opts.impersonationAllowsWrites),
      checkAccess(opts.roleRoutesNeedSecondFactor),
    ]

    // Callback style: the common request passes every step without a promise. A hook that has
    // answered (a preflight) must not call done: Fastify would go on to the handler.
    app.addHook('onRequest', (request, reply, done) => {
      let outcome: ReturnType<typeof runSteps>
      try {
        outcome = runSteps(ON_REQUEST, request, reply, matchedRoute(request))
      } catch (err) {
        return done(err as Error)
      }
      if (outcome instanceof Promise) outcome.then((o) => o !== 'answered' && done(), done)
      else if (outcome !== 'answered') done()
    })

    // The budgets that need the parsed body or the signed-in account, before the handler does any
    // work; only the routes that declare them run these hooks.

    /**
     * The route's per-email budget, keyed by the body's email (none without one) and split by who
     * asks: the client, and whether it is a browser that has signed in to that address's account.
     */
    async function takeEmailBudget(request: FastifyRequest): Promise<void> {
      const perEmail = matchedRoute(request).policy.rateLimit?.perEmail
      const email = emailOf(request)
      if (!perEmail || !email) return
      const asker: Asker = {
        ip: request.ip,
        knownBy: () => app.knownDevices.accountKnowing(app.signInCookies.browserOf(request).devices, email),
      }
      const { signIn, code, mail } = budgets.perEmail
      if (perEmail === 'signIn') return signIn.spend(email, asker)
      if (perEmail === 'code') return code.spend(clientAndAddress(request.ip, email))
      return mail.spend(email, asker, perEmail === 'codeMail' ? 'code' : 'link')
    }

    // A right answer keeps its claim like a wrong one: refunded right answers let one account keep
    // every hash worker busy. Only an attempt refused before its password was looked at gives it
    // back: invalid input, or the hash admission's or queue's own refusal (nothing was hashed).
    const passwordAttempts = new WeakMap<FastifyRequest, Take>()

    /**
     * One attempt at the current password from the account's budget, claimed before the hash is
     * checked: parallel guesses cannot all slip under the limit, and a right guess past it is
     * refused like a wrong one.
     */
    async function claimPasswordCheck(request: FastifyRequest): Promise<void> {
      if (!request.user) return
      passwordAttempts.set(request, await budgets.passwordChecks.claim(request.user.id))
    }

    async function refundUncheckedAttempt(request: FastifyRequest, _reply: FastifyReply, error: Error): Promise<void> {
      const taken = passwordAttempts.get(request)
      if (taken && error instanceof AppError && NOT_CHECKED.has(error.code)) {
        passwordAttempts.delete(request)
        await budgets.passwordChecks.refund(request.user!.id, taken)
      }
    }

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
      const before = [
        ...(registeredPolicy?.rateLimit?.perEmail ? [takeEmailBudget] : []),
        ...(registeredPolicy?.reverifiesPassword ? [claimPasswordCheck] : []),
      ]
      if (before.length) route.preHandler = [...before, ...hooks(route.preHandler)]
      if (registeredPolicy?.reverifiesPassword) route.onError = [refundUncheckedAttempt, ...hooks(route.onError)]
    })
    // Checked once every plugin has added its routes (and third-party routes got their policy).
    app.addHook('onReady', async () => routes.forEach(checkPolicy))
  },
  { name: 'route-policy', dependencies: ['@fastify/cookie', 'rate-limit'] },
)
