// Fault drills against the built server on the real PostgreSQL (and Redis), under load:
//  1. PostgreSQL goes away (a TCP proxy in front of it is cut): only 503 with Retry-After, never a
//     500, a crash or a request hung past 2 s; the time from its return to the first 200.
//  2. SIGTERM under load: in-flight requests finish, later ones get 503 or a refused connection, exit 0.
//  3. Redis goes away with REDIS_URL set: the service keeps serving and /api/health says so.
//  4. Argon2 saturating the CPU: the event loop stays responsive (liveness latency under a sign-in storm).
// Usage: npm run faults
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import pg from 'pg'
import { retarget, TcpProxy } from '../test/helpers/tcp-proxy.js'

const POSTGRES = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432'
const REDIS = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const ORIGIN = 'http://localhost:3000'
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const failures: string[] = []
const expect = (ok: boolean, message: string) => {
  if (!ok) failures.push(message)
}

const dbName = `faults_${Date.now()}`
const admin = new pg.Client({ connectionString: `${POSTGRES}/postgres` })
await admin.connect()
await admin.query(`create database ${dbName}`)

let port = 19787
async function startServer(env: Record<string, string>): Promise<{ child: ChildProcess; base: string; exit: Promise<number | null> }> {
  const p = port++
  const child = spawn(process.execPath, ['dist/src/server.js'], {
    env: {
      ...process.env,
      NODE_ENV: 'production',
      AUTH_SECRET: 'faults-secret-0123456789-0123456789-012345',
      AUTH_URL: `http://127.0.0.1:${p}`,
      WEB_ORIGIN: ORIGIN,
      PORT: String(p),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_GLOBAL_PER_MINUTE: '1000000',
      RATE_LIMIT_SIGN_IN_IP_PER_MINUTE: '1000000',
      RATE_LIMIT_SIGN_IN_EMAIL_PER_MINUTE: '1000000',
      RATE_LIMIT_SIGN_UP_IP_PER_MINUTE: '1000000',
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  const exit = new Promise<number | null>((r) => child.once('exit', r))
  const base = `http://127.0.0.1:${p}`
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/api/health/live`)).ok) break
    } catch {
      // starting
    }
    if (i > 300) throw new Error('server did not start')
    await sleep(100)
  }
  return { child, base, exit }
}

async function timed(url: string, init: RequestInit = {}) {
  const t0 = performance.now()
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(5000) })
    const body = await res.text()
    return { status: res.status, ms: performance.now() - t0, retryAfter: res.headers.get('retry-after'), body }
  } catch (err) {
    return { status: 0, ms: performance.now() - t0, retryAfter: null, body: String((err as Error).name) }
  }
}

async function signUp(base: string): Promise<string> {
  const res = await fetch(`${base}/api/auth/sign-up/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: ORIGIN },
    body: JSON.stringify({ name: 'Fault', email: `fault-${Date.now()}-${Math.random()}@example.com`, password: 'fault password 1' }),
  })
  return res.headers.getSetCookie().map((c) => c.split(';', 1)[0]!).find((c) => c.includes('session_token='))!
}

const report: Record<string, unknown> = { at: new Date().toISOString() }

// 1. PostgreSQL outage under load
{
  const target = retarget(`${POSTGRES}/${dbName}`, 0)
  const proxy = new TcpProxy(target.host, target.port)
  const proxyPort = await proxy.start()
  const { child, base, exit } = await startServer({ DATABASE_URL: retarget(`${POSTGRES}/${dbName}`, proxyPort).url })
  const cookie = await signUp(base)
  const during: Array<{ status: number; ms: number; retryAfter: string | null }> = []
  let phase: 'before' | 'down' | 'after' = 'before'
  let stop = false
  const workers = Array.from({ length: 16 }, async (_, i) => {
    while (!stop) {
      const r = i % 2
        ? await timed(`${base}/api/auth/get-session`, { headers: { cookie, origin: ORIGIN } })
        : await timed(`${base}/api/health`)
      if (phase === 'down') during.push(r)
      await sleep(20)
    }
  })
  await sleep(2000)
  phase = 'down'
  await proxy.cut()
  await sleep(5000)
  await proxy.restore()
  const restoredAt = performance.now()
  phase = 'after'
  let firstOkMs = -1
  for (;;) {
    const r = await timed(`${base}/api/auth/get-session`, { headers: { cookie, origin: ORIGIN } })
    if (r.status === 200 && r.body.includes('"user"')) {
      firstOkMs = performance.now() - restoredAt
      break
    }
    if (performance.now() - restoredAt > 30_000) break
    await sleep(25)
  }
  stop = true
  await Promise.all(workers)
  const statuses = [...new Set(during.map((r) => r.status))].sort()
  const maxMs = Math.max(...during.map((r) => r.ms))
  report.databaseOutage = {
    requestsWhileDown: during.length,
    statusesWhileDown: statuses,
    all503HaveRetryAfter: during.filter((r) => r.status === 503).every((r) => r.retryAfter),
    slowestWhileDownMs: Math.round(maxMs),
    msFromReturnToFirst200: Math.round(firstOkMs),
    processAlive: child.exitCode === null,
  }
  expect(statuses.every((s) => s === 503 || s === 200), `statuses while the database was down: ${statuses}`)
  expect(maxMs <= 2000, `a request hung ${Math.round(maxMs)} ms while the database was down`)
  expect(firstOkMs >= 0, 'the service did not recover within 30 s of the database returning')
  expect(child.exitCode === null, 'the server process died')
  child.kill('SIGTERM')
  await exit
  await proxy.close()
}

// 2. SIGTERM under load
{
  const { child, base, exit } = await startServer({ DATABASE_URL: `${POSTGRES}/${dbName}` })
  const email = `term-${Date.now()}@example.com`
  await fetch(`${base}/api/auth/sign-up/email`, {
    method: 'POST', headers: { 'content-type': 'application/json', origin: ORIGIN },
    body: JSON.stringify({ name: 'Term', email, password: 'term password 1' }),
  })
  const signIn = () => timed(`${base}/api/auth/sign-in/email`, {
    method: 'POST', headers: { 'content-type': 'application/json', origin: ORIGIN },
    body: JSON.stringify({ email, password: 'term password 1' }),
  })
  const inFlight = Array.from({ length: 12 }, signIn) // Argon2 makes each take a while
  await sleep(15)
  child.kill('SIGTERM')
  const finished = await Promise.all(inFlight)
  await sleep(50)
  const after = await timed(`${base}/api/health/live`)
  const code = await exit
  report.sigtermUnderLoad = {
    inFlight: finished.length,
    inFlightStatuses: finished.map((r) => r.status),
    laterRequest: after.status === 0 ? 'connection refused' : after.status,
    exitCode: code,
  }
  expect(finished.every((r) => r.status === 200 || r.status === 503), `in-flight answers: ${finished.map((r) => r.status)}`)
  expect(finished.some((r) => r.status === 200), 'no in-flight sign-in finished')
  expect(after.status === 0 || after.status === 503, `a request after SIGTERM got ${after.status}`)
  expect(code === 0, `exit code ${code}`)
}

// 3. Redis outage with REDIS_URL set
{
  const target = retarget(REDIS, 0)
  const proxy = new TcpProxy(target.host, target.port)
  const proxyPort = await proxy.start()
  const { child, base, exit } = await startServer({
    DATABASE_URL: `${POSTGRES}/${dbName}`,
    REDIS_URL: retarget(REDIS, proxyPort).url,
    REDIS_KEY_PREFIX: `faults-${Date.now()}:`,
  })
  const healthyBefore = JSON.parse((await timed(`${base}/api/health`)).body)
  await proxy.cut()
  await sleep(1500)
  const results = await Promise.all(Array.from({ length: 20 }, () => timed(`${base}/api/health/live`)))
  const sessionCheck = await timed(`${base}/api/auth/get-session`, { headers: { origin: ORIGIN } })
  const health = await timed(`${base}/api/health`)
  await proxy.restore()
  await sleep(1500)
  const healthAfter = JSON.parse((await timed(`${base}/api/health`)).body)
  report.redisOutage = {
    healthBefore: healthyBefore,
    servedWhileDown: results.filter((r) => r.status === 200).length,
    getSessionWhileDown: sessionCheck.status,
    healthWhileDown: { status: health.status, body: JSON.parse(health.body) },
    healthAfterReturn: healthAfter,
  }
  expect(results.every((r) => r.status === 200), 'requests failed while Redis was down')
  expect(sessionCheck.status === 200, `get-session while Redis was down: ${sessionCheck.status}`)
  expect(JSON.parse(health.body).redis === 'down', `/api/health did not report Redis down: ${health.body}`)
  expect(healthAfter.redis === 'ok', `/api/health after Redis returned: ${JSON.stringify(healthAfter)}`)
  child.kill('SIGTERM')
  await exit
  await proxy.close()
}

// 4. Event loop under an Argon2 storm
{
  const { child, base, exit } = await startServer({ DATABASE_URL: `${POSTGRES}/${dbName}` })
  const email = `storm-${Date.now()}@example.com`
  await fetch(`${base}/api/auth/sign-up/email`, {
    method: 'POST', headers: { 'content-type': 'application/json', origin: ORIGIN },
    body: JSON.stringify({ name: 'Storm', email, password: 'storm password 1' }),
  })
  const probe = async (n: number) => {
    const xs: number[] = []
    for (let i = 0; i < n; i++) {
      xs.push((await timed(`${base}/api/health/live`)).ms)
      await sleep(10)
    }
    xs.sort((a, b) => a - b)
    return { p50: Math.round(xs[Math.floor(n / 2)]! * 10) / 10, p99: Math.round(xs[Math.floor(n * 0.99)]! * 10) / 10 }
  }
  const idle = await probe(200)
  let stop = false
  const storm = Array.from({ length: 32 }, async () => {
    while (!stop) {
      await timed(`${base}/api/auth/sign-in/email`, {
        method: 'POST', headers: { 'content-type': 'application/json', origin: ORIGIN },
        body: JSON.stringify({ email, password: 'storm password 1' }),
      })
    }
  })
  await sleep(500)
  const loaded = await probe(200)
  stop = true
  await Promise.all(storm)
  report.eventLoopUnderArgon2 = { livenessIdleMs: idle, livenessDuringSignInStormMs: loaded }
  child.kill('SIGTERM')
  await exit
}

await admin.query(`drop database if exists ${dbName} with (force)`)
await admin.end()
console.log(JSON.stringify(report, null, 2))
mkdirSync('bench/results', { recursive: true })
writeFileSync(`bench/results/faults-${Date.now()}.json`, JSON.stringify(report, null, 2))
if (failures.length) {
  console.error(`FAULTS FAILED:\n- ${failures.join('\n- ')}`)
  process.exit(1)
}
console.log('FAULTS PASSED')
