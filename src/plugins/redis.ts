// One shared Redis connection when REDIS_URL is set (the budgets' shared store). Redis is an
// optimisation here, never a dependency: when it is down the service keeps serving, the budgets are
// counted in each instance's memory (plugins/budget-counter.ts), and /api/health says so.
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { Redis } from 'ioredis'

declare module 'fastify' {
  interface FastifyInstance {
    /** null when REDIS_URL is not set. */
    redis: Redis | null
  }
}

export type RedisStatus = 'ok' | 'down' | 'disabled'

export function redisStatus(redis: Redis | null): RedisStatus {
  if (!redis) return 'disabled'
  return redis.status === 'ready' ? 'ok' : 'down'
}

export default fp(
  async function redisConnection(app: FastifyInstance, opts: { url?: string }) {
    if (!opts.url) {
      app.decorate('redis', null)
      return
    }
    const redis = new Redis(opts.url, {
      // Fail fast instead of queueing commands while Redis is away; callers fall back.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 1000,
      // A half-open connection must not stall the rate-limit check of every request.
      commandTimeout: 500,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    })
    let down = false
    redis.on('error', (err) => {
      if (!down)
        app.log.warn(
          { err: { message: err.message } },
          "redis unavailable: budgets counted in this instance's memory until it is back",
        )
      down = true
    })
    redis.on('ready', () => {
      if (down) app.log.info('redis connection restored')
      down = false
    })
    app.decorate('redis', redis)
    app.addHook('onClose', async () => {
      redis.disconnect()
    })
  },
  { name: 'redis' },
)
