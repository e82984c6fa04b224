// A CPU profile (node --cpu-prof) of the built server under the bench's load (50 connections) on
// one target, and where its time goes: the functions with the most self time and the self time of
// each package (or file of ours), as shares of the time the process was not idle. The .cpuprofile
// is kept for a flame graph (Chrome DevTools, speedscope). The first seconds (start-up, warm-up)
// are in the profile too, so compare targets with the same --seconds.
// Usage: npm run bench:profile -- [rpc|rest|batch|session|live] [--seconds 10] [--top 25]
import { spawn } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { freePort } from '../test/helpers/port.js'
import { createDatabase, ORIGIN, postJson, serverEnv, sessionCookie, stop, waitUntilUp } from './lib.js'

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { seconds: { type: 'string', default: '10' }, top: { type: 'string', default: '25' } },
})
const target = positionals[0] ?? 'rpc'
const dir = `bench/results/profile-${target}-${Date.now()}`
mkdirSync(dir, { recursive: true })

const db = await createDatabase('bench_profile')
const port = await freePort()
const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, 'dist/src/server.js'], {
  env: serverEnv(port, { DATABASE_URL: db.url }),
  stdio: ['ignore', 'inherit', 'inherit'],
})
const base = `http://127.0.0.1:${port}`
try {
  await waitUntilUp(`${base}/api/health`, child)
  const res = await postJson(base, '/api/auth/sign-up/email', {
    name: 'Profile',
    email: `profile-${Date.now()}@example.com`,
    password: 'bench reader password',
  })
  const signedIn = { origin: ORIGIN, cookie: sessionCookie(res)! }
  // As RPCLink sends a call without input ({} in ?data=), and three of them through BatchLinkPlugin.
  const call = `${base}/api/v1/getProfile?data=${encodeURIComponent('{}')}`
  const targets: Record<string, { path: string; headers: Record<string, string> }> = {
    rpc: { path: new URL(call).pathname + new URL(call).search, headers: signedIn },
    rest: { path: '/api/v1/profile', headers: signedIn },
    batch: {
      path: `/api/v1/getProfile/__batch__?batch=${encodeURIComponent(JSON.stringify([call, call, call].map((url) => ({ url }))))}`,
      headers: { ...signedIn, 'x-orpc-batch': 'streaming' },
    },
    session: { path: '/api/auth/get-session', headers: signedIn },
    // As a load balancer probes it.
    live: { path: '/api/health/live', headers: {} },
  }
  const t = targets[target]
  if (!t) throw new Error(`no target "${target}": one of ${Object.keys(targets).join(', ')}`)
  const check = await fetch(base + t.path, { headers: t.headers })
  if (!check.ok) throw new Error(`${target}: ${check.status} ${await check.text()}`)
  await autocannon({ url: base + t.path, connections: 50, duration: 3, headers: t.headers })
  const r = await autocannon({ url: base + t.path, connections: 50, duration: Number(args.seconds), headers: t.headers })
  console.log(`${target}: ${Math.round(r.requests.average)} req/s, p99 ${r.latency.p99} ms, non-2xx ${r.non2xx}`)
} finally {
  await stop(child)
  await db.drop()
}

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
}
const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))
if (!file) throw new Error(`no profile written in ${dir}`)
const profile = JSON.parse(readFileSync(`${dir}/${file}`, 'utf8')) as {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}
const nodes = new Map(profile.nodes.map((n) => [n.id, n]))
const byFunction = new Map<string, number>()
const byPackage = new Map<string, number>()
let busy = 0
profile.samples.forEach((id, i) => {
  const { functionName, url, lineNumber } = nodes.get(id)!.callFrame
  if (functionName === '(idle)') return
  const time = profile.timeDeltas[i] ?? 0
  busy += time
  const where = url.replace(/.*node_modules\//, '').replace(/.*\/dist\//, 'dist/')
  const name = `${functionName || '(anonymous)'} ${where}${url ? `:${lineNumber + 1}` : ''}`
  byFunction.set(name, (byFunction.get(name) ?? 0) + time)
  const pkg =
    /node_modules\/(@[^/]+\/[^/]+|[^/]+)/.exec(url)?.[1] ??
    (url.includes('/dist/src/') ? `ours: ${url.replace(/.*\/dist\/src\//, '')}` : url.startsWith('node:') ? 'node' : functionName)
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + time)
})
const table = (m: Map<string, number>) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(args.top))
    .map(([name, time]) => ({ '% of busy time': ((time / busy) * 100).toFixed(2), name }))
console.log(`${dir}/${file}: ${(busy / 1e6).toFixed(1)} s busy`)
console.table(table(byFunction))
console.table(table(byPackage))
