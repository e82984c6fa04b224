// Server CPU time per request (user + system, from /proc/<pid>/stat) for hello-world, liveness,
// get-session and getProfile (the front end's RPC call and its REST twin). Unlike req/s, CPU per request hardly moves when something else runs
// on the machine, so it shows what a change to the pipeline saves even on a busy host.
// Usage: npm run bench:cpu [-- --requests 60000 --rounds 2]
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { freePort } from '../test/helpers/port.js'
import { createDatabase, ORIGIN, startServer, startTsProcess, stop } from './lib.js'

const { values: args } = parseArgs({ options: { requests: { type: 'string' }, rounds: { type: 'string' } } })
const REQUESTS = Number(args.requests ?? 60_000)
const ROUNDS = Number(args.rounds ?? 2)
if (process.platform !== 'linux') throw new Error('bench:cpu reads /proc: Linux only')

const TICKS_PER_SECOND = 100 // USER_HZ on Linux
/** CPU time used so far by process `pid`, in microseconds. */
function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / TICKS_PER_SECOND
}

async function cpuPerRequest(pid: number, url: string, headers: Record<string, string>): Promise<number> {
  await autocannon({ url, connections: 50, amount: 5_000, headers }) // warm-up
  const before = cpuMicros(pid)
  const result = await autocannon({ url, connections: 50, amount: REQUESTS, headers })
  if (result.non2xx > 0) throw new Error(`${url}: ${result.non2xx} answers were not 2xx`)
  return (cpuMicros(pid) - before) / REQUESTS
}

const db = await createDatabase('bench_cpu')
const server = await startServer({ DATABASE_URL: db.url })
const helloPort = await freePort()
const hello = `http://127.0.0.1:${helloPort}/`
const helloProcess = await startTsProcess('bench/hello.ts', [String(helloPort)], hello)
try {
  const signUp = await fetch(`${server.base}/api/auth/sign-up/email`, {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Bench', email: `cpu-${Date.now()}@example.com`, password: 'correct horse battery staple' }),
  })
  const cookie = signUp.headers.getSetCookie()[0]?.split(';', 1)[0]
  if (!signUp.ok || !cookie) throw new Error(`sign-up failed: ${signUp.status}`)
  const targets: { name: string; path: string; headers: Record<string, string> }[] = [
    { name: 'liveness', path: '/api/health/live', headers: { origin: ORIGIN } },
    { name: 'get-session', path: '/api/auth/get-session', headers: { origin: ORIGIN, cookie } },
    {
      name: 'getProfile (RPCLink GET)',
      // As RPCLink sends a call without input.
      path: `/api/v1/getProfile?data=${encodeURIComponent('{}')}`,
      headers: { origin: ORIGIN, cookie },
    },
    { name: 'getProfile (REST)', path: '/api/v1/profile', headers: { origin: ORIGIN, cookie } },
  ]
  const rows: Record<string, string | number>[] = []
  for (let round = 1; round <= ROUNDS; round++) {
    const base = await cpuPerRequest(helloProcess.pid!, hello, {})
    rows.push({ round, target: 'hello-world', 'CPU µs/request': base.toFixed(1), 'hello-world / target': '1.00' })
    for (const t of targets) {
      const us = await cpuPerRequest(server.child.pid!, server.base + t.path, t.headers)
      rows.push({ round, target: t.name, 'CPU µs/request': us.toFixed(1), 'hello-world / target': (base / us).toFixed(2) })
    }
  }
  console.table(rows)
} finally {
  await stop(helloProcess)
  await stop(server.child)
  await db.drop()
}
