import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { redisStatus } from '../plugins/redis.js'
import type { RoutePolicy } from '../shared/route-policy.js'
import { responseSerializer, sendSerialized } from '../shared/response-json.js'
import { VERSION } from '../shared/version.js'

const HealthBody = z.object({
  status: z.enum(['ok', 'degraded', 'unavailable']).describe('degraded: serving, but Redis is down'),
  database: z.enum(['ok', 'down']),
  redis: z.enum(['ok', 'down', 'disabled']).describe('disabled when REDIS_URL is not set'),
  sessionCache: z
    .enum(['listening', 'bypassed', 'disabled'])
    .describe(
      'bypassed: its change listener is not connected or has not heard its own heartbeat within 3 s, every session is read from the database; disabled: SESSION_CACHE_SIZE=0',
    ),
  version: z.string(),
  uptimeSeconds: z.number(),
})

const LiveBody = z.object({ status: z.literal('ok') })
// The probe's answer never changes: serialized once through its schema, not on every probe.
const LIVE = responseSerializer(LiveBody, 'GET', '/api/health/live')({ status: 'ok' })

// Probed by load balancers and monitors, which carry no session; throttling them would fail health checks.
const PROBE: RoutePolicy = { access: 'public', rateLimit: { global: false } }

/** The options of a probe's route: the probes' policy and tag, its OpenAPI words and answers. */
const probe = <R extends Record<number, z.ZodType>>(operationId: string, summary: string, response: R) => ({
  config: { policy: PROBE },
  schema: { operationId, tags: ['health'], summary, response },
})

function sessionCacheStatus(app: FastifyInstance): 'listening' | 'bypassed' | 'disabled' {
  if (app.config.auth.sessionCacheSize === 0) return 'disabled'
  return app.sessionCache.listening ? 'listening' : 'bypassed'
}

export default async function healthRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()

  app.get(
    '/api/health',
    probe('getHealth', 'Readiness: the process runs and the database answers within 1 s (Redis reported, not required)', {
      200: HealthBody,
      503: HealthBody,
    }),
    async (_request, reply) => {
      const uptimeSeconds = Math.round(process.uptime())
      const redis = redisStatus(app.redis)
      const sessionCache = sessionCacheStatus(app)
      try {
        await app.database.ping(1000)
        const status = redis === 'down' ? ('degraded' as const) : ('ok' as const)
        return { status, database: 'ok' as const, redis, sessionCache, version: VERSION, uptimeSeconds }
      } catch {
        reply.code(503).header('retry-after', '5')
        return { status: 'unavailable' as const, database: 'down' as const, redis, sessionCache, version: VERSION, uptimeSeconds }
      }
    },
  )

  app.get(
    '/api/health/live',
    probe('getLiveness', 'Liveness: the process runs (no database call)', { 200: LiveBody }),
    // Answered from memory: a plain function (src/plugins/running-handlers.ts has nothing to wait for).
    (_request, reply) => {
      sendSerialized(reply, LIVE)
    },
  )
}
