// Throughput and latency of the built server against a bare Fastify hello-world, measured in the
// same run on the same machine. The server runs from dist/ on a fresh PostgreSQL database
// (dropped afterwards). Targets alternate with the baseline so both see the same machine load.
// Usage: npm run bench [-- --only <group>] [--duration <s>] [--connections <n>]
// Later issues add their routes to TARGETS (a `setup` may sign up a user and return headers).
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import pg from 'pg'

const { values: args } = parseArgs({
  options: {
    only: { type: 'string' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
  },
})
const DURATION = Number(args.duration)
const CONNECTIONS = Number(args.connections)
const POSTGRES = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432'
const ORIGIN = 'http://localhost:3000'

interface Target {
  group: string
  name: string
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  path: string
  body?: unknown
  /** Runs once against the server before measuring; returns extra request headers (e.g. a cookie). */
  setup?: (base: string) => Promise<Record<string, string>>
}

const TARGETS: Target[] = [
  { group: 'foundation', name: 'liveness', path: '/api/health/live' },
  { group: 'foundation', name: 'health (database ping)', path: '/api/health' },
]

interface Row {
  target: string
  method: string
  path: string
  requestsPerSecond: number
  latencyP50Ms: number
  latencyP99Ms: number
  non2xx: number
  errors: number
  timeouts: number
  ratioToBaseline: number | null
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

async function waitUntilUp(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`${url}: process exited with ${child.exitCode}`)
    try {
      if ((await fetch(url)).ok) return
    } catch {
      // not listening yet
    }
    await sleep(100)
  }
  throw new Error(`${url} did not come up`)
}

/** Peak resident set size (VmHWM) of a process, in MiB; Linux only. */
function peakRssMiB(pid: number): number | null {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
    return kb ? Math.round((Number(kb) / 1024) * 10) / 10 : null
  } catch {
    return null
  }
}

async function measure(url: string, method: string, headers: Record<string, string>, body?: unknown) {
  const result = await autocannon({
    url,
    method: method as autocannon.Request['method'],
    connections: CONNECTIONS,
    duration: DURATION,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return {
    requestsPerSecond: Math.round(result.requests.average),
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
  }
}

const targets = TARGETS.filter((t) => !args.only || t.group === args.only)
if (targets.length === 0) throw new Error(`no bench target in group "${args.only}"`)

const dbName = `bench_${Date.now()}`
const admin = new pg.Client({ connectionString: `${POSTGRES}/postgres` })
await admin.connect()
await admin.query(`create database ${dbName}`)

const children: ChildProcess[] = []
async function cleanUp() {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM')
  await sleep(500)
  await admin.query(`drop database if exists ${dbName} with (force)`).catch(() => {})
  await admin.end().catch(() => {})
}
process.on('SIGINT', () => void cleanUp().then(() => process.exit(130)))

try {
  const serverPort = await freePort()
  const helloPort = await freePort()
  const base = `http://127.0.0.1:${serverPort}`
  const hello = `http://127.0.0.1:${helloPort}/`

  const server = spawn(process.execPath, ['dist/src/server.js'], {
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'production',
      AUTH_SECRET: 'bench-secret-0123456789-0123456789-0123456789',
      AUTH_URL: base,
      WEB_ORIGIN: ORIGIN,
      HOST: '127.0.0.1',
      PORT: String(serverPort),
      LOG_LEVEL: 'warn',
      DATABASE_URL: `${POSTGRES}/${dbName}`,
      // Measure the routes, not the per-IP limiter (autocannon is one IP).
      RATE_LIMIT_GLOBAL_PER_MINUTE: '1000000',
      RATE_LIMIT_SIGN_IN_IP_PER_MINUTE: '1000000',
      RATE_LIMIT_SIGN_IN_EMAIL_PER_MINUTE: '1000000',
      RATE_LIMIT_SIGN_UP_IP_PER_MINUTE: '1000000',
      RATE_LIMIT_MAIL_PER_HOUR: '1000000',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  children.push(server)
  const baseline = spawn(process.execPath, ['--import', 'tsx', 'bench/hello.ts', String(helloPort)], {
    env: { PATH: process.env.PATH },
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  children.push(baseline)
  await Promise.all([waitUntilUp(`${base}/api/health`, server), waitUntilUp(hello, baseline)])

  // Warm both up (JIT, pool connections) before anything counts.
  await measure(`${base}/api/health/live`, 'GET', {}, undefined).catch(() => {})
  await measure(hello, 'GET', {}, undefined)

  const rows: Row[] = []
  const baselineRuns: number[] = []
  for (const target of targets) {
    const method = target.method ?? 'GET'
    const headers = { origin: ORIGIN, ...(await target.setup?.(base)) }
    const hw = await measure(hello, 'GET', {})
    baselineRuns.push(hw.requestsPerSecond)
    rows.push({ target: 'hello-world (baseline)', method: 'GET', path: '/', ...hw, ratioToBaseline: 1 })
    const m = await measure(`${base}${target.path}`, method, headers, target.body)
    rows.push({
      target: target.name,
      method,
      path: target.path,
      ...m,
      ratioToBaseline: hw.requestsPerSecond ? Math.round((m.requestsPerSecond / hw.requestsPerSecond) * 100) / 100 : null,
    })
  }

  const peakRss = peakRssMiB(server.pid!)
  console.log(`\n${DURATION} s per target, ${CONNECTIONS} connections, Node ${process.version}, database ${dbName}`)
  console.table(rows.map((r) => ({
    target: r.target,
    'req/s': r.requestsPerSecond,
    'p50 ms': r.latencyP50Ms,
    'p99 ms': r.latencyP99Ms,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    'x baseline': r.ratioToBaseline,
  })))
  console.log(`server peak RSS (VmHWM): ${peakRss ?? 'n/a'} MiB`)

  mkdirSync('bench/results', { recursive: true })
  const file = `bench/results/${new Date().toISOString().replace(/[:.]/g, '-')}${args.only ? `-${args.only}` : ''}.json`
  writeFileSync(file, `${JSON.stringify({
    at: new Date().toISOString(),
    node: process.version,
    durationSeconds: DURATION,
    connections: CONNECTIONS,
    serverPeakRssMiB: peakRss,
    baselineRequestsPerSecond: baselineRuns,
    rows,
  }, null, 2)}\n`)
  console.log(`written to ${file}`)
} finally {
  await cleanUp()
}
