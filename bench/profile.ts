// Scratch: CPU profile of the built server under autocannon load on one target.
import { spawn } from 'node:child_process'
import autocannon from 'autocannon'
import { createDatabase, ORIGIN, serverEnv, waitUntilUp, stop, postJson, sessionCookie } from './lib.js'
import { freePort } from '../test/helpers/port.js'

const [target = 'rpc', dir = '/tmp/i36/prof', seconds = '10'] = process.argv.slice(2)
const db = await createDatabase('prof')
const port = await freePort()
const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, 'dist/src/server.js'], {
  env: serverEnv(port, { DATABASE_URL: db.url }),
  stdio: ['ignore', 'inherit', 'inherit'],
})
const base = `http://127.0.0.1:${port}`
try {
  await waitUntilUp(`${base}/api/health`, child)
  const res = await postJson(base, '/api/auth/sign-up/email', {
    name: 'P',
    email: `p${Date.now()}@example.com`,
    password: 'bench reader password',
  })
  const cookie = sessionCookie(res)!
  const paths: Record<string, string> = {
    rpc: `/api/v1/getProfile?data=${encodeURIComponent(JSON.stringify({ meta: [] }))}`,
    rest: '/api/v1/profile',
    live: '/api/health/live',
    session: '/api/auth/get-session',
    batch: `/api/v1/getProfile/__batch__?batch=${encodeURIComponent(JSON.stringify([0, 1, 2].map(() => ({ url: `${base}/api/v1/getProfile?data=%7B%7D` }))))}`,
  }
  const headers: Record<string, string> = target === 'live' ? {} : { origin: ORIGIN, cookie, 'x-orpc-batch': 'streaming' }
  const check = await fetch(base + paths[target], { headers })
  console.log(check.status, (await check.text()).slice(0, 300))
  await autocannon({ url: base + paths[target], connections: 50, duration: 3, headers })
  const r = await autocannon({ url: base + paths[target], connections: 50, duration: Number(seconds), headers })
  console.log(target, 'req/s', r.requests.average, 'p99', r.latency.p99, 'non2xx', r.non2xx)
} finally {
  await stop(child)
  await db.drop()
}
