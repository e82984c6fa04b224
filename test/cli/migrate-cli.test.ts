// `npm run migrate` (src/cli/migrate.ts): applies the migrations once, then has nothing to do.
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { migrations } from '../../migrations/index.js'
import { freshPostgresUrl, usingPostgres } from '../helpers/db.js'
import { entryPoint, ROOT } from '../helpers/paths.js'

// Spawns real processes: slow on a loaded machine, not a hang.
t.setTimeout(240_000)

function migrate(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, entryPoint('src/cli/migrate.ts'), {
      cwd: ROOT,
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    child.once('exit', (code) => resolve({ code, out }))
  })
}

async function databaseEnv(): Promise<Record<string, string>> {
  if (usingPostgres()) return { DATABASE_URL: await freshPostgresUrl() }
  const dir = await mkdtemp(join(tmpdir(), 'insight-migrate-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return { PGLITE_DIR: dir }
}

t.test('migrate applies every migration, and a second run finds nothing to do', async (t) => {
  const env = await databaseEnv()
  const first = await migrate(env)
  t.equal(first.code, 0, first.out)
  for (const name of Object.keys(migrations)) t.match(first.out, name)
  const second = await migrate(env)
  t.equal(second.code, 0)
  t.match(second.out, /already up to date/)
})

t.test('migrate exits 1 with one line when the database cannot be reached', async (t) => {
  const res = await migrate({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nothing' })
  t.equal(res.code, 1)
  t.equal(res.out.trim().split('\n').length, 1)
  t.match(res.out, /^Migration failed on PostgreSQL/)
})

t.test('migrate exits 1 naming a bad variable', async (t) => {
  const res = await migrate({ DATABASE_POOL_SIZE: 'many' })
  t.equal(res.code, 1)
  t.match(res.out, /^Configuration error: Invalid DATABASE_POOL_SIZE/)
})
