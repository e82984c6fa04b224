// Trusted origins: CORS by hand (no CORS plugin) and the origin rule against cross-site requests
// (docs/http-contract.md, "Trusted origins, CSRF and CORS"). Two steps of the route-policy hook
// (plugins/route-policy.ts), judged on the route that matched, never on the request line.
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../shared/errors.js'
import type { RoutePolicy } from '../shared/route-policy.js'

/** What the origin steps need of the matched route. */
interface Route {
  policy: RoutePolicy
  /** Under /api/auth/: every method is origin-checked. */
  authRoute: boolean
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
const ALLOWED_METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS'
// Named one by one: with credentials a browser reads `*` as a header named "*". Beside ours, what
// oRPC's link plugins send: SimpleCsrfProtectionLinkPlugin's token, BatchLinkPlugin's mode, and
// the event iterators' resume point.
const ALLOWED_HEADERS = 'Content-Type, Authorization, X-Request-Id, X-CSRF-Token, X-ORPC-Batch, Last-Event-ID'
// What the web app's JavaScript may read of an answer: the wait of a 429 or 503, the id to quote
// in a report, and set-auth-jwt, the token header a later JWT plugin sends (exposing a header that
// is never sent is harmless; listed now so that plugin needs no CORS change).
const EXPOSED_HEADERS = 'Retry-After, X-Request-Id, Set-Auth-Jwt'

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

const MINUTE = 60_000
/** Distinct origins logged in one minute; past them, one line says that more were refused. */
const LOGGED_PER_MINUTE = 100

/**
 * Warns of an untrusted origin once per origin and minute, naming what to set: the browser hides
 * the refusal's body from the page, so the server's log is where its developer can read it.
 * Anyone may send any number of distinct origins, so the memory (and the log) is bounded: at most
 * LOGGED_PER_MINUTE origins a minute are remembered and logged.
 */
export class RefusedOrigins {
  private windowStart = Number.NEGATIVE_INFINITY
  private readonly logged = new Set<string>()
  private overflowReported = false

  constructor(private readonly now: () => number) {}

  report(log: FastifyBaseLogger, origin: string, what: 'Origin' | 'Referer'): void {
    const now = this.now()
    if (now - this.windowStart >= MINUTE) {
      this.windowStart = now
      this.logged.clear()
      this.overflowReported = false
    }
    const named = origin.slice(0, 200)
    if (this.logged.has(named)) return
    if (this.logged.size >= LOGGED_PER_MINUTE) {
      if (!this.overflowReported) {
        this.overflowReported = true
        log.warn(`more than ${LOGGED_PER_MINUTE} untrusted origins this minute: the others are not logged until it ends`)
      }
      return
    }
    this.logged.add(named)
    log.warn(
      { origin: named, header: what },
      `untrusted origin ${named}: its requests get no CORS headers and its state-changing ones 403 INVALID_ORIGIN; to trust a web app there, set WEB_ORIGIN to it or add it to AUTH_TRUSTED_ORIGIN (comma-separated)`,
    )
  }
}

/**
 * The CORS headers for a trusted origin (on every answer, errors too), and the answer to a
 * preflight: 204 for a trusted origin, 403 otherwise. An untrusted Origin is reported to the log.
 */
export const answerCors =
  (trusted: ReadonlySet<string>, refused: RefusedOrigins) =>
  (request: FastifyRequest, reply: FastifyReply): 'answered' | undefined => {
    const origin = request.headers.origin
    const originTrusted = origin !== undefined && trusted.has(origin)
    if (originTrusted) {
      reply.header('access-control-allow-origin', origin)
      reply.header('access-control-allow-credentials', 'true')
      reply.header('access-control-expose-headers', EXPOSED_HEADERS)
    } else if (origin !== undefined && origin !== 'null') {
      refused.report(request.log, origin, 'Origin')
    }
    reply.header('vary', 'Origin')
    if (request.method !== 'OPTIONS' || !request.headers['access-control-request-method']) return undefined
    if (!originTrusted) throw untrusted('Origin', origin ?? null)
    reply.header('access-control-allow-methods', ALLOWED_METHODS)
    reply.header('access-control-allow-headers', ALLOWED_HEADERS)
    reply.header('access-control-max-age', '600')
    reply.code(204).send()
    return 'answered'
  }

/**
 * The origin rule. Any request to an /api/auth route, and any state-changing request to any route,
 * whose Origin is present and untrusted is refused. Without an Origin, a state-changing request is
 * judged by its Referer, and one that carries a cookie but neither header is refused. Only a route
 * declaring `checkOrigin: false` (a signed webhook) is exempt.
 */
export const checkOrigin =
  (trusted: ReadonlySet<string>, refused: RefusedOrigins) =>
  (request: FastifyRequest, _reply: FastifyReply, route: Route): void => {
    if (route.policy.checkOrigin === false) return
    const stateChanging = STATE_CHANGING.has(request.method)
    // The matched route's own path (the route table), not the request line.
    if (!stateChanging && !route.authRoute) return
    const origin = request.headers.origin
    if (origin !== undefined) {
      if (origin === 'null') throw new AppError(403, 'MISSING_OR_NULL_ORIGIN', 'Origin is null')
      if (!trusted.has(origin)) throw untrusted('Origin', origin)
      return
    }
    // GET navigations are judged by Origin only: the identity provider's redirect carries its own Referer.
    if (!stateChanging) return
    const referer = request.headers.referer
    if (referer !== undefined) {
      const refererOrigin = originOf(referer)
      if (refererOrigin === null || !trusted.has(refererOrigin)) {
        if (refererOrigin !== null) refused.report(request.log, refererOrigin, 'Referer')
        throw untrusted('Referer', refererOrigin)
      }
      return
    }
    // A browser sending cookies always sends Origin or Referer on a POST; a bare cookie is suspect.
    if (request.headers.cookie !== undefined) {
      throw new AppError(403, 'MISSING_OR_NULL_ORIGIN', 'Origin header is required')
    }
  }
