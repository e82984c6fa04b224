// `npm run migrate` (src/cli/migrate.ts): applies the migrations once, then has nothing to do.
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { Migrator } from 'kysely/migration'
import t from 'tap'
import { openDatabase } from '../../db/index.js'
import { migrations } from '../../migrations/index.js'
import { freshPostgresUrl, migratedDatabaseEnv, usingPostgres } from '../helpers/db.js'
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

t.test("every migration's down undoes its up: all the way down, then up again, gives the same schema", async (t) => {
  const env = await migratedDatabaseEnv('down-up')
  const handle = await openDatabase({ url: env.DATABASE_URL, pgliteDir: env.PGLITE_DIR ?? 'memory://', poolSize: 2 })
  t.teardown(() => handle.close())
  const migrator = new Migrator({ db: handle.db, provider: { getMigrations: async () => migrations } })
  const schema = async () =>
    (
      await sql<{ d: string }>`
        select c.table_name || '.' || c.column_name || ' ' || c.data_type || ' ' || c.is_nullable || ' ' ||
          coalesce(c.column_default, '') || ' ' || c.is_identity as d
        from information_schema.columns c
        where c.table_schema = current_schema() and c.table_name not like 'kysely_migration%'
        union all select 'index ' || indexdef from pg_indexes where schemaname = current_schema()
        union all select 'trigger ' || tgname from pg_trigger t join pg_class r on r.oid = t.tgrelid
          where not t.tgisinternal and r.relnamespace = current_schema()::regnamespace
        union all select 'sequence ' || sequence_name from information_schema.sequences where sequence_schema = current_schema()
        order by 1`.execute(handle.db)
    ).rows.map((r) => r.d)
  const before = await schema()
  t.ok(before.length > 100, 'a migrated schema to compare')
  for (const name of Object.keys(migrations).reverse()) {
    const { error, results } = await migrator.migrateDown()
    t.error(error, `${name} down`)
    t.same(
      results?.map((r) => [r.migrationName, r.status]),
      [[name, 'Success']],
      `${name} down`,
    )
  }
  t.same(
    (await schema()).filter((d) => !d.startsWith('index ') || !d.includes('kysely_migration')),
    [],
    'nothing left',
  )
  const { error } = await migrator.migrateToLatest()
  t.error(error)
  t.same(await schema(), before, 'the same schema again')
})
