// A migrated PostgreSQL database, made once per test run by test/helpers/before.ts when DATABASE_URL
// is set and dropped by test/helpers/after.ts: each test file's database is created as a copy of it
// (`create database ... template`), which takes a fraction of a second, instead of migrating an
// empty one. Each file still runs migrateToLatest on its copy, so a template that missed a
// migration could not hide it. Its name is kept in .tap/ for the run's test processes.
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { migrateToLatest } from '../../db/migrate.js'
import { ROOT } from './paths.js'

export const PG_TEMPLATE_FILE = join(ROOT, '.tap/pg-template.json')

interface TemplateRecord {
  /** The server's URL (DATABASE_URL) the template was made on. */
  server: string
  name: string
}

/** The URL of database `name` on the server of `adminUrl`. */
export function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}

async function onServer(adminUrl: string, statement: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    await admin.query(statement)
  } finally {
    await admin.end()
  }
}

/** Drops the template the last run left behind, if it did not get to its `after` step. */
export async function dropPgTemplate(): Promise<void> {
  const record = readPgTemplate(true)
  if (!record) return
  await onServer(record.server, `drop database if exists "${record.name}" with (force)`)
  rmSync(PG_TEMPLATE_FILE, { force: true })
}

/** Makes the migrated template on the server of `adminUrl` and records its name for this run. */
export async function writePgTemplate(adminUrl: string): Promise<void> {
  await dropPgTemplate()
  const name = `tpl_${process.pid}_${randomBytes(4).toString('hex')}`
  await onServer(adminUrl, `create database "${name}"`)
  const db = new Kysely<unknown>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: databaseUrl(adminUrl, name), max: 1 }) }),
  })
  try {
    await migrateToLatest(db)
  } finally {
    await db.destroy()
  }
  // Nobody may connect to it: a copy cannot be made while a session is open on its template.
  await onServer(adminUrl, `alter database "${name}" allow_connections false`)
  mkdirSync(dirname(PG_TEMPLATE_FILE), { recursive: true })
  const partial = `${PG_TEMPLATE_FILE}.${process.pid}`
  writeFileSync(partial, JSON.stringify({ server: adminUrl, name } satisfies TemplateRecord))
  renameSync(partial, PG_TEMPLATE_FILE)
}

/**
 * The name of this run's template on the server of DATABASE_URL, if there is one (a file run outside
 * tap gets none, and migrates an empty database instead).
 */
export function readPgTemplate(anyServer = false): TemplateRecord | undefined {
  if (!existsSync(PG_TEMPLATE_FILE)) return undefined
  const record = JSON.parse(readFileSync(PG_TEMPLATE_FILE, 'utf8')) as TemplateRecord
  return anyServer || record.server === process.env.DATABASE_URL ? record : undefined
}
