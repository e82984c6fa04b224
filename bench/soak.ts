// Mixed-load soak: sign-ups, sign-ins, profile reads, journal writes and lists, usage increments at
// a fixed rate against the built server on the real PostgreSQL. Asserts zero 5xx, zero lost writes
// (every acknowledged journal entry is in the database afterwards) and RSS at the end within 15% of
// RSS after the first 30 s. Usage: npm run soak [-- --seconds 120 --rate 150]
import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import pg from 'pg'

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: process.env.SOAK_SECONDS ?? '120' },
    rate: { type: 'string', default: process.env.SOAK_RATE ?? '150' },
    postgres: { type: 'string', default: process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432' },
  },
})
const SECONDS = Number(values.seconds)
const RATE = Number(values.rate)
const WARMUP_S = Math.min(30, Math.floor(SECONDS / 4))
const ORIGIN = 'http://localhost:3000'
const PORT = 18787

const dbName = `soak_${Date.now()}`
const admin = new pg.Client({ connectionString: `${values.postgres}/postgres` })
await admin.connect()
await admin.query(`create database ${dbName}`)
const databaseUrl = `${values.postgres}/${dbName}`

const server = spawn(process.execPath, ['dist/src/server.js'], {
  env: {
    ...process.env,
    NODE_ENV: 'production',
    AUTH_SECRET: 'soak-secret-0123456789-0123456789-0123456789',
    AUTH_URL: `http://127.0.0.1:${PORT}`,
    WEB_ORIGIN: ORIGIN,
    DATABASE_URL: databaseUrl,
    PORT: String(PORT),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    PAYMENT_GATEWAY: '',
    // The soak measures the service, not the abuse limits, from one IP.
    RATE_LIMIT_GLOBAL_PER_MINUTE: '1000000',
    RATE_LIMIT_SIGN_IN_IP_PER_MINUTE: '1000000',
    RATE_LIMIT_SIGN_IN_EMAIL_PER_MINUTE: '1000000',
    RATE_LIMIT_SIGN_UP_IP_PER_MINUTE: '1000000',
  },
  stdio: ['ignore', 'inherit', 'inherit'],
})
const base = `http://127.0.0.1:${PORT}`
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${base}/api/health`)).ok) break
  } catch {
    // starting
  }
  if (i > 300) throw new Error('server did not start')
  await new Promise((r) => setTimeout(r, 100))
}

const rssKb = (): number => {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))
  return m ? Number(m[1]) : 0
}

interface User { email: string; password: string; cookie: string }
async function call(method: string, path: string, body?: unknown, cookie?: string) {
  const headers: Record<string, string> = { origin: ORIGIN }
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (cookie) headers.cookie = cookie
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  const setCookie = res.headers.getSetCookie().map((c) => c.split(';', 1)[0]!).find((c) => /session_token=./.test(c))
  return { status: res.status, json: text ? JSON.parse(text) : null, setCookie }
}

let seq = 0
async function signUpUser(): Promise<User | undefined> {
  const email = `soak-${process.pid}-${seq++}@example.com`
  const password = 'soak password 123'
  const res = await call('POST', '/api/auth/sign-up/email', { name: 'Soak', email, password })
  record(res.status)
  return res.status === 200 && res.setCookie ? { email, password, cookie: res.setCookie } : undefined
}

const statuses = new Map<number, number>()
const record = (status: number): void => {
  statuses.set(status, (statuses.get(status) ?? 0) + 1)
}
const acknowledged: string[] = []
let networkErrors = 0

const users: User[] = []
for (let i = 0; i < 20; i++) {
  const u = await signUpUser()
  if (u) users.push(u)
}
// Unlimited plan, so journal writes measure the write path and not the plan limit.
const setUnlimited = async () => {
  const c = new pg.Client({ connectionString: databaseUrl })
  await c.connect()
  await c.query(`update "user" set plan = 'premium_plus', plan_expires_at = null`)
  await c.end()
}
await setUnlimited()

const pick = <T>(xs: T[]): T => xs[Math.floor(Math.random() * xs.length)]!
const actions: Array<[number, () => Promise<void>]> = [
  [4, async () => { const u = await signUpUser(); if (u) users.push(u) }],
  [4, async () => {
    const u = pick(users)
    const res = await call('POST', '/api/auth/sign-in/email', { email: u.email, password: u.password })
    record(res.status)
    if (res.setCookie) u.cookie = res.setCookie
  }],
  [30, async () => record((await call('GET', '/api/v1/getProfile', undefined, pick(users).cookie)).status)],
  [22, async () => {
    const res = await call('POST', '/api/v1/journal/entries', { content: `soak entry ${seq++}`, mood: 3 }, pick(users).cookie)
    record(res.status)
    if (res.status === 201) acknowledged.push(res.json.id)
  }],
  [20, async () => record((await call('GET', '/api/v1/journal/entries?limit=20', undefined, pick(users).cookie)).status)],
  [20, async () => record((await call('POST', '/api/v1/usage/aiMessages/increment', {}, pick(users).cookie)).status)],
]
const totalWeight = actions.reduce((s, [w]) => s + w, 0)
const chooseAction = () => {
  let r = Math.random() * totalWeight
  for (const [w, fn] of actions) if ((r -= w) < 0) return fn
  return actions[0]![1]
}

const started = Date.now()
let rssAtWarmup = 0
const rssSamples: number[] = []
const inFlight = new Set<Promise<void>>()
let sent = 0
while (Date.now() - started < SECONDS * 1000) {
  const due = Math.floor(((Date.now() - started) / 1000) * RATE)
  while (sent < due) {
    sent++
    // New sign-ups became free users: keep them unlimited too, now and then.
    const p: Promise<void> = chooseAction()().catch(() => { networkErrors++ }).finally(() => inFlight.delete(p))
    inFlight.add(p)
  }
  const elapsed = (Date.now() - started) / 1000
  if (Math.floor(elapsed) > rssSamples.length) {
    rssSamples.push(rssKb())
    if (rssSamples.length === WARMUP_S) rssAtWarmup = rssSamples.at(-1)!
    if (rssSamples.length % 10 === 0) await setUnlimited()
  }
  await new Promise((r) => setTimeout(r, 5))
}
await Promise.all(inFlight)
const rssAtEnd = rssKb()

const check = new pg.Client({ connectionString: databaseUrl })
await check.connect()
const found = await check.query<{ n: number }>('select count(*)::int as n from journal_entry where id = any($1)', [acknowledged])
await check.end()
server.kill('SIGTERM')
await new Promise((r) => server.once('exit', r))
await admin.query(`drop database if exists ${dbName} with (force)`)
await admin.end()

const fivexx = [...statuses].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0)
const lost = acknowledged.length - found.rows[0]!.n
const rssGrowth = rssAtWarmup ? rssAtEnd / rssAtWarmup - 1 : 0
const result = {
  at: new Date().toISOString(),
  seconds: SECONDS,
  targetRate: RATE,
  requests: sent,
  achievedRate: Math.round(sent / SECONDS),
  statuses: Object.fromEntries(statuses),
  networkErrors,
  fivexx,
  journalAcknowledged: acknowledged.length,
  journalLost: lost,
  rssKbAfterWarmup: rssAtWarmup,
  warmupSeconds: WARMUP_S,
  rssKbAtEnd: rssAtEnd,
  rssGrowthPercent: Math.round(rssGrowth * 1000) / 10,
}
console.log(JSON.stringify(result, null, 2))
mkdirSync('bench/results', { recursive: true })
writeFileSync(`bench/results/soak-${Date.now()}.json`, JSON.stringify(result, null, 2))

const failures = [
  fivexx > 0 && `${fivexx} responses were 5xx`,
  networkErrors > 0 && `${networkErrors} requests failed at the network level`,
  lost > 0 && `${lost} acknowledged journal entries are missing`,
  rssGrowth > 0.15 && `RSS grew ${result.rssGrowthPercent}% after warm-up (limit 15%)`,
].filter(Boolean)
if (failures.length) {
  console.error(`SOAK FAILED: ${failures.join('; ')}`)
  process.exit(1)
}
console.log('SOAK PASSED')
