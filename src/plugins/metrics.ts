// Prometheus metrics at /metrics: requests by route and status, latency, database pool, password
// hashes in flight, process metrics. Reachable from loopback or with METRICS_TOKEN as a bearer token.
import { timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import { forbidden } from '../shared/errors.js'

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/

function tokenMatches(header: string | undefined, token: string): boolean {
  if (!header?.startsWith('Bearer ')) return false
  const given = Buffer.from(header.slice(7))
  const expected = Buffer.from(token)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

export default fp(
  async function metrics(app: FastifyInstance) {
    // One registry per app instance, so several apps in one process (tests) never collide.
    const register = new Registry()
    collectDefaultMetrics({ register })

    const labelNames = ['method', 'route', 'status'] as const
    const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests', labelNames, registers: [register] })
    const duration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request latency',
      labelNames,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [register],
    })
    new Gauge({
      name: 'db_pool_connections',
      help: 'Database pool connections by state',
      labelNames: ['state'],
      registers: [register],
      collect() {
        const stats = app.database.poolStats()
        this.set({ state: 'total' }, stats.total)
        this.set({ state: 'idle' }, stats.idle)
        this.set({ state: 'waiting' }, stats.waiting)
      },
    })
    new Gauge({
      name: 'password_hashes_in_flight',
      help: 'Argon2/scrypt operations running now',
      registers: [register],
      collect() {
        this.set(app.hasher.pool.inFlight)
      },
    })

    // The session cache (auth/session/cache.ts) counts in plain numbers on its hot path; they are
    // read here only when scraped.
    const cache = app.sessionCache
    for (const [name, stat, help] of [
      ['session_cache_hits_total', 'hits', 'Session lookups answered from memory'],
      ['session_cache_misses_total', 'misses', 'Session lookups that read the database while the cache was usable'],
      ['session_cache_evictions_total', 'evictions', 'Sessions dropped to keep the cache within SESSION_CACHE_SIZE'],
      ['session_cache_invalidations_total', 'invalidations', 'Change notifications heard from PostgreSQL'],
    ] as const) {
      let reported = 0
      new Counter({
        name,
        help,
        registers: [register],
        collect() {
          this.inc(cache.stats[stat] - reported)
          reported = cache.stats[stat]
        },
      })
    }
    new Gauge({
      name: 'session_cache_entries',
      help: 'Sessions held in memory now',
      registers: [register],
      collect() {
        this.set(cache.size)
      },
    })
    new Gauge({
      name: 'session_cache_listening',
      help: '1 while the change listener is connected and listening (the cache is used), else 0',
      registers: [register],
      collect() {
        this.set(cache.listening ? 1 : 0)
      },
    })

    // One pair of labelled children per (method, route, status), found by one string key: prom-client
    // would otherwise hash the label object twice on every request.
    const series = new Map<string, { count: ReturnType<typeof requests.labels>; latency: ReturnType<typeof duration.labels> }>()
    app.addHook('onResponse', (request, reply, done) => {
      // The route pattern, never the raw URL: ids would explode the label cardinality.
      const route = request.is404 ? 'unmatched' : request.routeOptions.url!
      const status = String(reply.statusCode)
      const key = `${request.method} ${status} ${route}`
      let children = series.get(key)
      if (!children) {
        const labels = { method: request.method, route, status }
        children = { count: requests.labels(labels), latency: duration.labels(labels) }
        series.set(key, children)
      }
      children.count.inc()
      children.latency.observe(reply.elapsedTime / 1000)
      done()
    })

    const allowed = (request: FastifyRequest): boolean => {
      const token = app.config.metricsToken
      if (token && tokenMatches(request.headers.authorization, token)) return true
      // Behind a proxy every request comes from loopback, so loopback counts only without trustProxy.
      return !app.config.trustProxy && LOOPBACK.test(request.socket.remoteAddress ?? '')
    }

    // Public to the route policy: access is decided here (loopback or the token), and a scraper is never throttled.
    app.get(
      '/metrics',
      { schema: { hide: true }, config: { policy: { access: 'public', rateLimit: { global: false } } } },
      async (request, reply) => {
        if (!allowed(request)) throw forbidden('Metrics are served to loopback or with METRICS_TOKEN')
        reply.type(register.contentType)
        return register.metrics()
      },
    )
  },
  { name: 'metrics' },
)
