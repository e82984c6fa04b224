// Trusted origins, the CSRF rule and CORS, by hand (spec §5.5: no CORS plugin). See API.md §3.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../errors.js'

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
const ALLOWED_METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS'
const ALLOWED_HEADERS = 'Content-Type, Authorization, X-Request-Id'
// The gateway authenticates by signature and sends its own (or no) Origin.
const EXEMPT = /^\/api\/v1\/payments\/webhook\//

export function originOf(value: string | undefined): string | null {
  if (!value) return null
  try {
    const url = new URL(value)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : null
  } catch {
    return null
  }
}

/** A relative path ("/x", never "//x") or an absolute URL on a trusted origin. */
export function isSafeRedirect(target: string, trusted: ReadonlySet<string>): boolean {
  if (target.startsWith('/')) return !target.startsWith('//') && !target.startsWith('/\\')
  const origin = originOf(target)
  return origin !== null && trusted.has(origin)
}

/** Throws 403 INVALID_CALLBACK_URL unless `url` (when given) is a safe redirect: no open redirects. */
export function assertSafeRedirect(url: string | undefined, trusted: ReadonlySet<string>, field: string): void {
  if (url !== undefined && !isSafeRedirect(url, trusted)) {
    throw new AppError(403, 'INVALID_CALLBACK_URL', `${field} is not on a trusted origin`)
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    trustedOrigins: ReadonlySet<string>
  }
}

export default fp(
  async function origins(app: FastifyInstance, opts: { trustedOrigins: string[] }) {
    const trusted: ReadonlySet<string> = new Set(opts.trustedOrigins)
    app.decorate('trustedOrigins', trusted)

    app.addHook('onRequest', async (request: FastifyRequest, reply) => {
      const path = request.url.split('?', 1)[0]!
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

      if (EXEMPT.test(path)) return
      const isAuth = path.startsWith('/api/auth/')
      const stateChanging = STATE_CHANGING.has(request.method) && (isAuth || path.startsWith('/api/v1/'))
      if (!isAuth && !stateChanging) return

      if (origin !== undefined) {
        if (origin === 'null') throw new AppError(403, 'MISSING_OR_NULL_ORIGIN', 'Origin is null')
        if (!originTrusted) throw new AppError(403, 'INVALID_ORIGIN', 'Origin is not trusted')
        return
      }
      // GET navigations are judged by Origin only: the provider's redirect carries its own Referer.
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
      if (request.headers.cookie) {
        throw new AppError(403, 'MISSING_OR_NULL_ORIGIN', 'Origin header is required')
      }
    })
  },
  { name: 'origins' },
)
