// One database per test file (PGlite takes seconds to start): in-memory PGlite by default, or a
// fresh database on the PostgreSQL server of DATABASE_URL, dropped when the file ends.
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import t from 'tap'
import { openDatabase, type DatabaseHandle } from '../../db/index.js'
import { migrateToLatest } from '../../db/migrate.js'
import { readPgliteSnapshot } from './pglite-snapshot.js'

let shared: Promise<DatabaseHandle> | undefined

export const usingPostgres = (): boolean => Boolean(process.env.DATABASE_URL)

/** The URL of a fresh, empty database on the server of DATABASE_URL; dropped at the end of the file. */
export async function freshPostgresUrl(): Promise<string> {
  const adminUrl = process.env.DATABASE_URL!
  const name = `t_${process.pid}_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`create database "${name}"`)
  await admin.end()
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: adminUrl })
    await c.connect()
    await c.query(`drop database if exists "${name}" with (force)`)
    await c.end()
  })
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}

export function testDatabase(): Promise<DatabaseHandle> {
  shared ??= (async () => {
    const url = usingPostgres() ? await freshPostgresUrl() : undefined
    const handle = await openDatabase({
      url,
      pgliteDir: 'memory://',
      poolSize: 10,
      pgliteSnapshot: url ? undefined : readPgliteSnapshot(),
    })
    await migrateToLatest(handle.db)
    t.teardown(() => handle.close())
    return handle
  })()
  return shared
}
