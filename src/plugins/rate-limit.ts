// Rate limits through @fastify/rate-limit: a global per-IP budget checked before the session
// lookup (a flood never reaches the database), and tighter budgets on the auth routes, per IP
// (at onRequest) and per email (at preHandler, once the body is parsed). Memory store by default;
// Redis (app.redis) when REDIS_URL is set, so every instance shares one budget. If Redis is down, requests
// are served unthrottled rather than refused (skipOnError): the limiter must not take the API down.
import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest, onRequestHookHandler, preHandlerHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../errors.js'

const MINUTE = 60_000
const HOUR = 60 * MINUTE

interface Budget {
  max: number
  windowMs: number
}

type Check = (request: FastifyRequest) => Promise<{ exceeded: boolean; retryAfter: number }>

interface RouteLimits {
  ip?: Check
  email?: Check
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Takes one mail from the recipient's hourly budget (shared with the mail routes' limit).
     * False when it is spent: the caller then skips sending instead of failing the request.
     */
    takeMailBudget(request: FastifyRequest, email: string): Promise<boolean>
  }
}

const rateLimited = (retryAfter: number) =>
  new AppError(429, 'RATE_LIMITED', 'Too many requests, try again later', { retryAfter: Math.max(1, retryAfter) })

const emailOf = (request: FastifyRequest) => String((request.body as { email?: unknown } | undefined)?.email ?? '')

// Paths that are probed by load balancers and monitors; throttling them would fail health checks.
const UNLIMITED = /^\/api\/health(\/|$)|^\/metrics$/

export default fp(
  async function rateLimits(app: FastifyInstance) {
    const limits = app.config.rateLimit
    const redis = app.redis ?? undefined
    if (redis && redis.status !== 'ready') {
      // Give a starting Redis a moment, so the first requests are counted in the shared store.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 1000)
        redis.once('ready', () => {
          clearTimeout(timer)
          resolve()
        })
      })
    }

    await app.register(rateLimit, {
      global: false,
      skipOnError: true,
      redis,
      nameSpace: `${app.config.redisKeyPrefix}rl:`,
      cache: 10_000,
    })

    const checker = (name: string, budget: Budget, key: (request: FastifyRequest) => string): Check => {
      const run = app.createRateLimit({
        max: budget.max,
        timeWindow: budget.windowMs,
        keyGenerator: (request) => `${name}:${key(request)}`,
      })
      return async (request) => {
        const result = await run(request)
        if (result.isAllowed) return { exceeded: false, retryAfter: 0 }
        return { exceeded: result.isExceeded, retryAfter: result.ttlInSeconds }
      }
    }

    const global = checker('global', { max: limits.globalPerMinute, windowMs: MINUTE }, (r) => r.ip)
    app.addHook('onRequest', async (request) => {
      if (UNLIMITED.test(request.url.split('?', 1)[0]!)) return
      const { exceeded, retryAfter } = await global(request)
      if (exceeded) throw rateLimited(retryAfter)
    })

    // One mail budget per recipient, whichever route or sign-in sends the mail. The memory store
    // is per checker, so the budget must be one checker; its key is the body's email unless a
    // caller names the recipient.
    const recipient = new WeakMap<FastifyRequest, string>()
    const mail = checker('mail', { max: limits.mailPerHour, windowMs: HOUR }, (r) => recipient.get(r) ?? emailOf(r))
    const perRoute: Record<string, RouteLimits> = {
      'POST /api/auth/sign-in/email': {
        ip: checker('sign-in:ip', { max: limits.signInIpPerMinute, windowMs: MINUTE }, (r) => r.ip),
        email: checker('sign-in:email', { max: limits.signInEmailPerMinute, windowMs: MINUTE }, emailOf),
      },
      'POST /api/auth/sign-up/email': {
        ip: checker('sign-up:ip', { max: limits.signUpIpPerMinute, windowMs: MINUTE }, (r) => r.ip),
      },
      'POST /api/auth/request-password-reset': { email: mail },
      'POST /api/auth/send-verification-email': { email: mail },
    }

    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method]
      for (const method of methods) {
        const spec = perRoute[`${method} ${route.url}`]
        if (!spec) continue
        if (spec.ip) {
          const byIp = spec.ip
          const hook: onRequestHookHandler = async (request) => {
            const { exceeded, retryAfter } = await byIp(request)
            if (exceeded) throw rateLimited(retryAfter)
          }
          route.onRequest = [...toArray(route.onRequest), hook]
        }
        if (spec.email) {
          const byEmail = spec.email
          const hook: preHandlerHookHandler = async (request) => {
            if (!emailOf(request)) return
            const { exceeded, retryAfter } = await byEmail(request)
            if (exceeded) throw rateLimited(retryAfter)
          }
          // First among the pre-handlers: a throttled request does no other work.
          route.preHandler = [hook, ...toArray(route.preHandler)]
        }
      }
    })

    app.decorate('takeMailBudget', async (request: FastifyRequest, email: string) => {
      recipient.set(request, email.toLowerCase())
      try {
        return !(await mail(request)).exceeded
      } finally {
        recipient.delete(request)
      }
    })
  },
  { name: 'rate-limit', dependencies: ['origins', 'redis'] },
)

function toArray<T>(value: T | T[] | undefined): T[] {
  if (value === undefined) return []
  return Array.isArray(value) ? value : [value]
}
