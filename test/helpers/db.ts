// One database per test file (PGlite takes seconds to start): in-memory PGlite from the run's
// migrated snapshot by default, or on the PostgreSQL server of DATABASE_URL a copy of the run's
// migrated template database, dropped when the file ends. Files that share a process one after
// another (test/helpers/group.ts) share its PGlite, emptied between them.
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import pg from 'pg'
import t from 'tap'
import { openDatabase, type DatabaseHandle } from '../../db/index.js'
import { migrateToLatest } from '../../db/migrate.js'
import { afterEachFile, atProcessEnd, inGroup } from './group.js'
import { databaseUrl, readPgTemplate } from './pg-template.js'
import { readPgliteSnapshot } from './pglite-snapshot.js'

let shared: Promise<DatabaseHandle> | undefined

export const usingPostgres = (): boolean => Boolean(process.env.DATABASE_URL)

/**
 * The URL of a fresh database on the server of DATABASE_URL, dropped at the end of the file: empty,
 * or with `template` a copy of that database.
 */
export async function freshPostgresUrl(template?: string): Promise<string> {
  const adminUrl = process.env.DATABASE_URL!
  const name = `t_${process.pid}_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    await admin.query(`create database "${name}"${template ? ` template "${template}"` : ''}`)
  } catch (err) {
    // A template a crashed run left recorded but dropped: start empty (the caller migrates).
    if (!template || (err as { code?: string }).code !== '3D000') throw err
    await admin.query(`create database "${name}"`)
  } finally {
    await admin.end()
  }
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: adminUrl })
    await c.connect()
    await c.query(`drop database if exists "${name}" with (force)`)
    await c.end()
  })
  return databaseUrl(adminUrl, name)
}

/** Every table but the migrations' emptied, every sequence restarted: the database as migrated. */
async function emptyDatabase(db: DatabaseHandle['db']): Promise<void> {
  const { rows: tables } = await sql<{ name: string }>`
    select tablename as name from pg_tables where schemaname = 'public' and tablename not like 'kysely_migration%'`.execute(db)
  await sql`truncate ${sql.join(tables.map(({ name }) => sql.table(name)))} restart identity cascade`.execute(db)
  const { rows: sequences } = await sql<{ name: string }>`
    select sequencename as name from pg_sequences where schemaname = 'public'`.execute(db)
  for (const { name } of sequences) await sql`alter sequence ${sql.table(name)} restart`.execute(db)
}

export function testDatabase(): Promise<DatabaseHandle> {
  shared ??= (async () => {
    // Outside a tap run (no template made) the database starts empty; migrateToLatest fills it.
    const url = usingPostgres() ? await freshPostgresUrl(readPgTemplate()?.name) : undefined
    const handle = await openDatabase({
      url,
      pgliteDir: 'memory://',
      poolSize: 10,
      pgliteSnapshot: url ? undefined : readPgliteSnapshot(),
    })
    await migrateToLatest(handle.db)
    if (!url && inGroup()) {
      // Several files in one process (test/helpers/group.ts): a PGlite costs half a CPU second to
      // start, so they share one, emptied at each file's end as a fresh one would start.
      atProcessEnd(() => handle.close())
      afterEachFile(() => emptyDatabase(handle.db))
    } else {
      t.teardown(() => {
        shared = undefined
        return handle.close()
      })
    }
    return handle
  })()
  return shared
}

/**
 * The environment of a child process (the server, a command) of this file on a migrated database
 * of its own: a copy of the run's template on the PostgreSQL server, or a temporary PGlite data
 * directory unpacked from the run's snapshot (an empty one, which the child migrates, outside a tap
 * run). Tests whose subject is a first start on an empty database use an empty one instead.
 */
export async function migratedDatabaseEnv(prefix: string): Promise<Record<string, string>> {
  if (usingPostgres()) return { DATABASE_URL: await freshPostgresUrl(readPgTemplate()?.name) }
  const dir = await mkdtemp(join(tmpdir(), `insight-${prefix}-`))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const snapshot = readPgliteSnapshot()
  if (snapshot) await (await openDatabase({ pgliteDir: dir, poolSize: 1, pgliteSnapshot: snapshot })).close()
  return { PGLITE_DIR: dir }
}
