// Prometheus metrics at /metrics: requests by route and status, latency, database pool, password
// hashes in flight, process metrics. Reachable from loopback or with METRICS_TOKEN as a bearer token.
import { timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client'
import { forbidden } from '../shared/errors.js'
import type { RequestLog } from './logging.js'
import { type MatchedRoute, matchedRoute } from './route-policy.js'

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/

function tokenMatches(header: string | undefined, token: string): boolean {
  if (!header?.startsWith('Bearer ')) return false
  const given = Buffer.from(header.slice(7))
  const expected = Buffer.from(token)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

interface Series {
  labels: { method: string; route: string; status: string }
  count: number
  sum: number
  /** Observations per bucket (not cumulative); the last one is +Inf. */
  buckets: number[]
}

/**
 * `http_requests_total` and `http_request_duration_seconds`, counted in plain numbers on every
 * response and turned into prom-client's form only when scraped. prom-client's own Counter and
 * Histogram validate and hash the label set on every observation, which cost more per request than
 * the rest of the metrics work together.
 */
class RequestSeries {
  /**
   * Per matched route (one object per route, made once: route-policy.ts), its series by method and
   * status as one number: no label string is built or hashed on the way.
   */
  private readonly byRoute = new Map<MatchedRoute, Map<number, Series>>()
  /** Methods in the order first seen; Fastify routes only the methods Node's parser knows. */
  private readonly methods: string[] = []

  observe(route: MatchedRoute, method: string, statusCode: number, elapsedMs: number): void {
    let ofRoute = this.byRoute.get(route)
    if (!ofRoute) {
      ofRoute = new Map()
      this.byRoute.set(route, ofRoute)
    }
    let m = this.methods.indexOf(method)
    if (m < 0) m = this.methods.push(method) - 1
    const key = m * 1000 + statusCode
    let s = ofRoute.get(key)
    if (!s) {
      // The route pattern, never the raw URL: ids would explode the label cardinality.
      const labels = { method, route: route.url ?? 'unmatched', status: String(statusCode) }
      s = { labels, count: 0, sum: 0, buckets: BUCKETS.map(() => 0).concat(0) }
      ofRoute.set(key, s)
    }
    const seconds = elapsedMs / 1000
    let i = 0
    while (i < BUCKETS.length && seconds > BUCKETS[i]!) i++
    s.buckets[i]!++
    s.count++
    s.sum += seconds
  }

  private all(): Series[] {
    return [...this.byRoute.values()].flatMap((ofRoute) => [...ofRoute.values()])
  }

  /** The request counts, as a prom-client metric. */
  counter() {
    return this.metric('http_requests_total', 'HTTP requests', 'counter', () =>
      this.all().map((s) => ({ labels: s.labels, value: s.count })),
    )
  }

  /** The latency histogram, in the lines prom-client's Histogram writes (`le` first, cumulative). */
  histogram() {
    const name = 'http_request_duration_seconds'
    return this.metric(name, 'HTTP request latency', 'histogram', () =>
      this.all().flatMap((s) => {
        let cumulative = 0
        const bucketLines = s.buckets.map((n, i) => {
          cumulative += n
          const le = i < BUCKETS.length ? String(BUCKETS[i]) : '+Inf'
          return { metricName: `${name}_bucket`, labels: { le, ...s.labels }, value: cumulative }
        })
        return [
          ...bucketLines,
          { metricName: `${name}_sum`, labels: s.labels, value: s.sum },
          { metricName: `${name}_count`, labels: s.labels, value: s.count },
        ]
      }),
    )
  }

  /**
   * What Registry.registerMetric reads of a metric: its name, help and type, and `get`, which reads
   * the series only when scraped. Both metrics read the one series, so a reset of either empties it.
   */
  private metric(name: string, help: string, type: 'counter' | 'histogram', values: () => object[]) {
    const get = () => ({ name, help, type, aggregator: 'sum', values: values() })
    return { name, help, type, aggregator: 'sum', get, reset: () => this.byRoute.clear() }
  }
}

export interface MetricsOptions {
  /** Where every answered request is observed (logging.ts): counted there, without a hook of our own. */
  requestLog: RequestLog
}

export default fp(
  async function metrics(app: FastifyInstance, opts: MetricsOptions) {
    // One registry per app instance, so several apps in one process (tests) never collide.
    const register = new Registry()
    collectDefaultMetrics({ register })

    const requests = new RequestSeries()
    register.registerMetric(requests.counter() as never)
    register.registerMetric(requests.histogram() as never)
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
    // Read when scraped: the session cache is auth's, built after this plugin (auth/plugin.ts).
    const cache = () => app.sessionCache
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
          this.inc(cache().stats[stat] - reported)
          reported = cache().stats[stat]
        },
      })
    }
    new Gauge({
      name: 'session_cache_entries',
      help: 'Sessions held in memory now',
      registers: [register],
      collect() {
        this.set(cache().size)
      },
    })
    new Gauge({
      name: 'session_cache_listening',
      help: '1 while the change listener is listening and hears its own heartbeat (the cache is used), else 0',
      registers: [register],
      collect() {
        this.set(cache().listening ? 1 : 0)
      },
    })

    opts.requestLog.onAnswered((request, reply) =>
      requests.observe(matchedRoute(request), request.method, reply.statusCode, reply.elapsedTime),
    )

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
