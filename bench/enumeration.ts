// Account enumeration by timing: request-password-reset and send-verification-email must answer in
// the same time whether or not the email has an account. Measures both routes for emails with an
// account and emails without one, interleaved one request at a time (so both see the same machine),
// and reports the medians and their difference. The server runs from dist/ on a fresh PostgreSQL
// database, with SMTP unset (the mail is logged, as in development).
// Usage: npm run bench:enumeration [-- --samples <n>]
import { mkdirSync, writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { createDatabase, postJson, startServer, stop } from './lib.js'

const { values: args } = parseArgs({ options: { samples: { type: 'string', default: '400' } } })
const SAMPLES = Number(args.samples)

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}
const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!
const round = (ms: number) => Math.round(ms * 1000) / 1000

const database = await createDatabase('bench_enum')
const server = await startServer({ DATABASE_URL: database.url, LOG_LEVEL: 'error', NODE_ENV: 'development' })
try {
  const known: string[] = []
  for (let i = 0; i < SAMPLES; i++) {
    const email = `known-${i}@bench.example`
    const res = await postJson(server.base, '/api/auth/sign-up/email', {
      name: 'Bench',
      email,
      password: 'correct horse battery staple',
    })
    if (!res.ok) throw new Error(`sign-up failed: ${res.status}`)
    known.push(email)
  }

  const timed = async (path: string, email: string) => {
    const started = performance.now()
    const res = await postJson(server.base, path, { email })
    await res.arrayBuffer()
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`)
    return performance.now() - started
  }

  const rows = []
  for (const path of ['/api/auth/request-password-reset', '/api/auth/send-verification-email']) {
    // Warm-up, then alternate known and unknown so load changes hit both alike.
    for (let i = 0; i < 50; i++) await timed(path, `warm-${i}@bench.example`)
    const withAccount: number[] = []
    const without: number[] = []
    for (let i = 0; i < SAMPLES; i++) {
      withAccount.push(await timed(path, known[i]!))
      without.push(await timed(path, `unknown-${path.length}-${i}@bench.example`))
    }
    const row = {
      route: `POST ${path}`,
      samples: SAMPLES,
      medianWithAccountMs: round(median(withAccount)),
      medianWithoutAccountMs: round(median(without)),
      medianDifferenceMs: round(median(withAccount) - median(without)),
      p90WithAccountMs: round(percentile(withAccount, 0.9)),
      p90WithoutAccountMs: round(percentile(without, 0.9)),
    }
    rows.push(row)
    console.log(JSON.stringify(row))
  }
  mkdirSync('bench/results', { recursive: true })
  writeFileSync('bench/results/enumeration.json', `${JSON.stringify({ at: new Date().toISOString(), rows }, null, 2)}\n`)
} finally {
  await stop(server.child)
  await database.drop()
}
