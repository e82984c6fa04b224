// Memory of the session cache under many distinct sessions: 100,000 users, one session each, made
// in SQL (signing up 100,000 accounts through Argon2id would take the whole run), then
// get-session with a random one of them for two minutes against the built server on PostgreSQL.
// Every session is read once first (the cache fills), then the two minutes are measured: samples of
// the server's RSS and V8 heap, and the cache's size, hits and evictions from /metrics; reports
// whether RSS stays flat: no growth from the first half of the run to the second (V8's collections
// make it swing in a sawtooth meanwhile, which the spread after the first quarter shows). Usage: npm run soak:sessions [-- --seconds 120 --sessions 100000 --cache-size N]
import { createHash } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { sign } from '@fastify/cookie'
import autocannon from 'autocannon'
import { createDatabase, ORIGIN, rssKb, sleep, startServer, withClient } from './lib.js'

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '120' },
    sessions: { type: 'string', default: '100000' },
    connections: { type: 'string', default: '50' },
    'cache-size': { type: 'string' },
    'node-options': { type: 'string' },
  },
})
const SECONDS = Number(values.seconds)
const SESSIONS = Number(values.sessions)
const SECRET = 'bench-secret-0123456789-0123456789-0123456789' // bench/lib.ts serverEnv's AUTH_SECRET

const db = await createDatabase('session_soak')
const env: Record<string, string> = { DATABASE_URL: db.url }
if (values['cache-size']) env.SESSION_CACHE_SIZE = values['cache-size']
if (values['node-options']) env.NODE_OPTIONS = values['node-options']
const server = await startServer(env)
try {
  const tokens = Array.from({ length: SESSIONS }, (_, i) => `session-soak-token-${i}-${process.pid}`)
  await withClient(db.url, async (c) => {
    await c.query(
      `insert into "user" (id, name, email, email_verified, role, plan)
       select 'soak-' || g, 'Soak ' || g, 'soak-' || g || '@example.com', true, 'member', 'free'
       from generate_series(0, $1::int - 1) as g`,
      [SESSIONS],
    )
    await c.query(
      `insert into "session" (id, token_hash, user_id, expires_at, remember_me)
       select 'soak-session-' || (g - 1), h, 'soak-' || (g - 1), now() + interval '30 days', true
       from unnest($1::text[]) with ordinality as t(h, g)`,
      [tokens.map((t) => createHash('sha256').update(t).digest('hex'))],
    )
  })
  // NODE_ENV=production in bench/lib.ts: the Secure cookie name.
  const cookies = tokens.map((t) => `__Secure-better-auth.session_token=${encodeURIComponent(sign(t, SECRET))}`)
  const probe = await fetch(`${server.base}/api/auth/get-session`, { headers: { origin: ORIGIN, cookie: cookies[0]! } })
  if (!(await probe.text()).includes('soak-0')) throw new Error(`a soak session is not accepted: ${probe.status}`)

  // Every session once before the clock starts, so the two minutes measure a cache holding its
  // working set rather than one still filling (random picks take minutes to meet all 100,000).
  let next = 0
  await autocannon({
    url: `${server.base}/api/auth/get-session`,
    connections: Number(values.connections),
    amount: SESSIONS,
    headers: { origin: ORIGIN },
    requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, cookie: cookies[next++ % cookies.length]! } }) }],
  })

  const metric = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN)
  const samples: Array<Record<string, number>> = []
  const started = Date.now()
  let sampling = true
  const sampler = (async () => {
    while (sampling) {
      const text = await (await fetch(`${server.base}/metrics`)).text()
      samples.push({
        second: Math.round((Date.now() - started) / 1000),
        rssMiB: Math.round(rssKb(server.child.pid!) / 1024),
        heapUsedMiB: Math.round(metric(text, 'nodejs_heap_size_used_bytes') / 1024 / 1024),
        cacheEntries: metric(text, 'session_cache_entries'),
        hits: metric(text, 'session_cache_hits_total'),
        misses: metric(text, 'session_cache_misses_total'),
        evictions: metric(text, 'session_cache_evictions_total'),
      })
      await sleep(5_000)
    }
  })()
  const result = await autocannon({
    url: `${server.base}/api/auth/get-session`,
    connections: Number(values.connections),
    duration: SECONDS,
    headers: { origin: ORIGIN },
    requests: [
      {
        setupRequest: (req) => ({
          ...req,
          headers: { ...req.headers, cookie: cookies[Math.floor(Math.random() * cookies.length)]! },
        }),
      },
    ],
  })
  sampling = false
  await sampler

  // V8 collects the old generation in a sawtooth, so RSS swings; what must not happen is growth.
  // Flat: the highest RSS of the second half of the run is within 5% of the first half's.
  const tail = samples.filter((s) => s.second! >= SECONDS / 4)
  const rss = tail.map((s) => s.rssMiB!)
  const spread = rss.length ? (Math.max(...rss) - Math.min(...rss)) / Math.min(...rss) : Number.NaN
  const peak = (from: number, to: number) =>
    Math.max(...samples.filter((s) => s.second! >= from && s.second! < to).map((s) => s.rssMiB!))
  const firstHalfPeak = peak(0, SECONDS / 2)
  const secondHalfPeak = peak(SECONDS / 2, SECONDS + 1)
  const summary = {
    at: new Date().toISOString(),
    sessions: SESSIONS,
    seconds: SECONDS,
    cacheSize: values['cache-size'] ?? 'default',
    requestsPerSecond: Math.round(result.requests.average),
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    rssSpreadAfterFirstQuarter: Math.round(spread * 1000) / 1000,
    rssPeakFirstHalfMiB: firstHalfPeak,
    rssPeakSecondHalfMiB: secondHalfPeak,
    rssFlat: secondHalfPeak <= firstHalfPeak * 1.05,
    samples,
  }
  console.table(samples)
  console.log(JSON.stringify({ ...summary, samples: undefined }, null, 2))
  mkdirSync('bench/results', { recursive: true })
  const file = `bench/results/${summary.at.replace(/[:.]/g, '-')}-session-soak.json`
  writeFileSync(file, `${JSON.stringify(summary, null, 2)}\n`)
  console.log(`written to ${file}`)
} finally {
  server.child.kill('SIGTERM')
  await server.exit
  await db.drop()
}
