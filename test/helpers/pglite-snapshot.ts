// A migrated PGlite's data directory, written once per test run by test/helpers/before.ts. Starting
// an empty PGlite and migrating it takes seconds per test file; starting one from this snapshot
// takes well under one. Each file still runs migrateToLatest on its copy, so a snapshot that
// missed a migration could not hide it.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { Kysely, PGliteDialect } from 'kysely'
import { migrateToLatest } from '../../db/migrate.js'
import { ROOT } from './paths.js'

export const PGLITE_SNAPSHOT = join(ROOT, '.tap/pglite-migrated.tar')

export async function writePgliteSnapshot(): Promise<void> {
  const pglite = await PGlite.create()
  const db = new Kysely<unknown>({ dialect: new PGliteDialect({ pglite }) })
  try {
    await migrateToLatest(db)
    const dump = await pglite.dumpDataDir('none')
    mkdirSync(dirname(PGLITE_SNAPSHOT), { recursive: true })
    // Written aside and renamed: a test file never reads half a snapshot.
    const partial = `${PGLITE_SNAPSHOT}.${process.pid}`
    writeFileSync(partial, Buffer.from(await dump.arrayBuffer()))
    renameSync(partial, PGLITE_SNAPSHOT)
  } finally {
    await db.destroy()
  }
}

/**
 * The snapshot a test run made, if any: a file run outside tap uses the last run's (its migrations
 * still run on top) or, with none, an empty PGlite.
 */
export function readPgliteSnapshot(): Blob | undefined {
  if (!existsSync(PGLITE_SNAPSHOT)) return undefined
  // PGlite reads the snapshot only through arrayBuffer() (and its type, to tell a gzip): handing it
  // the file's own bytes spares a copy into a Blob and Node's chunked read back out of it, about
  // 0.1 CPU s of every test file's start.
  const bytes = readFileSync(PGLITE_SNAPSHOT)
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
  const buffer = (whole ? bytes.buffer : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)) as ArrayBuffer
  return { type: '', size: bytes.byteLength, arrayBuffer: async () => buffer } as Blob
}
