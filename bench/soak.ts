// Mixed-load soak: sign-ups, sign-ins, profile reads, journal writes and lists, usage increments at
// a fixed rate against the built server on the real PostgreSQL. Asserts zero 5xx, zero lost writes
// (every acknowledged journal entry is in the database afterwards) and RSS at the end within 15% of
// RSS after the first 30 s. Usage: npm run soak [-- --seconds 120 --rate 150]
import { mkdirSync, writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { createDatabase, ORIGIN, POSTGRES, rssKb as rssKbOf, startServer, withClient } from './lib.js'

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: process.env.SOAK_SECONDS ?? '120' },
    rate: { type: 'string', default: process.env.SOAK_RATE ?? '150' },
    postgres: { type: 'string', default: POSTGRES },
  },
})
const SECONDS = Number(values.seconds)
const RATE = Number(values.rate)
const WARMUP_S = Math.min(30, Math.floor(SECONDS / 4))

const db = await createDatabase('soak', values.postgres)
const databaseUrl = db.url
const { child: server, base, exit: serverExit } = await startServer({ DATABASE_URL: databaseUrl })
const rssKb = (): number => rssKbOf(server.pid!)
/** The server's V8 heap in use (KiB) from its /metrics (loopback is allowed), to tell a leak from RSS noise. */
const heapUsedKb = async (): Promise<number | null> => {
  try {
    const text = await (await fetch(`${base}/metrics`)).text()
    const m = /^nodejs_heap_size_used_bytes (\d+(?:\.\d+)?)/m.exec(text)
    return m ? Math.round(Number(m[1]) / 1024) : null
  } catch {
    return null
  }
}
const heapSamples: Array<{ second: number; rssKb: number; heapUsedKb: number | null }> = []

interface User {
  email: string
  password: string
  cookie: string
}
async function call(method: string, path: string, body?: unknown, cookie?: string) {
  const headers: Record<string, string> = { origin: ORIGIN }
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (cookie) headers.cookie = cookie
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  const setCookie = res.headers
    .getSetCookie()
    .map((c) => c.split(';', 1)[0]!)
    .find((c) => /session_token=./.test(c))
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
const setUnlimited = () =>
  withClient(databaseUrl, (c) => c.query(`update "user" set plan = 'premium_plus', plan_expires_at = null`))
await setUnlimited()

const pick = <T>(xs: T[]): T => xs[Math.floor(Math.random() * xs.length)]!
const actions: Array<[number, () => Promise<void>]> = [
  [
    4,
    async () => {
      const u = await signUpUser()
      if (u) users.push(u)
    },
  ],
  [
    4,
    async () => {
      const u = pick(users)
      const res = await call('POST', '/api/auth/sign-in/email', { email: u.email, password: u.password })
      record(res.status)
      if (res.setCookie) u.cookie = res.setCookie
    },
  ],
  [30, async () => record((await call('GET', '/api/v1/getProfile', undefined, pick(users).cookie)).status)],
  [
    22,
    async () => {
      const res = await call('POST', '/api/v1/journal/entries', { content: `soak entry ${seq++}`, mood: 3 }, pick(users).cookie)
      record(res.status)
      if (res.status === 201) acknowledged.push(res.json.id)
    },
  ],
  [20, async () => record((await call('GET', '/api/v1/journal/entries?limit=20', undefined, pick(users).cookie)).status)],
  [20, async () => record((await call('POST', '/api/v1/usage/aiMessages/increment', {}, pick(users).cookie)).status)],
]
const totalWeight = actions.reduce((s, [w]) => s + w, 0)
const chooseAction = () => {
  let r = Math.random() * totalWeight
  for (const [w, fn] of actions) {
    r -= w
    if (r < 0) return fn
  }
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
    const p: Promise<void> = chooseAction()()
      .catch(() => {
        networkErrors++
      })
      .finally(() => inFlight.delete(p))
    inFlight.add(p)
  }
  const elapsed = (Date.now() - started) / 1000
  if (Math.floor(elapsed) > rssSamples.length) {
    rssSamples.push(rssKb())
    if (rssSamples.length === WARMUP_S) rssAtWarmup = rssSamples.at(-1)!
    if (rssSamples.length % 5 === 0) {
      const second = rssSamples.length
      void heapUsedKb().then((heap) => heapSamples.push({ second, rssKb: rssKb(), heapUsedKb: heap }))
    }
    if (rssSamples.length % 10 === 0) await setUnlimited()
  }
  await new Promise((r) => setTimeout(r, 5))
}
await Promise.all(inFlight)
const rssAtEnd = rssKb()
const heapAtEnd = await heapUsedKb()

const found = await withClient(databaseUrl, (c) =>
  c.query<{ n: number }>('select count(*)::int as n from journal_entry where id = any($1)', [acknowledged]),
)
server.kill('SIGTERM')
await serverExit
await db.drop()

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
  heapUsedKbAtEnd: heapAtEnd,
  samplesEvery5s: heapSamples,
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
