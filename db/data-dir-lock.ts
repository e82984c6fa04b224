// The embedded database (PGlite) is single-process: two processes opening one data directory
// corrupt it. The server writes its pid into the directory while it runs; the command line and a
// second server read it and refuse, with a message that says what to do.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../src/config.js'

export const LOCK_FILE = 'insight-server.pid'

/** The pid of a live process holding the directory, or null (no lock, or a stale one). */
export function dataDirHolder(dir: string): number | null {
  let pid: number
  try {
    pid = Number(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')).pid)
  } catch {
    return null
  }
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return null
  try {
    process.kill(pid, 0) // signal 0: only asks whether the process exists
    return pid
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? pid : null
  }
}

export function dataDirInUseMessage(dir: string, pid: number): string {
  return (
    `The embedded database in ${dir} is in use by a running server or command (pid ${pid}); it cannot be opened ` +
    `by two processes at once. Stop the server (kill ${pid}, or Ctrl+C where it runs), run this ` +
    'command again, then start the server. With DATABASE_URL (PostgreSQL) it works while the server runs.'
  )
}

/** Claims the PGlite data directory for this process until it exits; no-op on PostgreSQL. */
export function holdDataDirLock(database: Config['database']): void {
  if (database.url || database.pgliteDir === 'memory://') return
  const dir = database.pgliteDir
  const holder = dataDirHolder(dir)
  if (holder !== null) throw new Error(dataDirInUseMessage(dir, holder))
  mkdirSync(dir, { recursive: true })
  const file = join(dir, LOCK_FILE)
  writeFileSync(file, JSON.stringify({ pid: process.pid, startedAt: new Date().toISOString() }))
  process.once('exit', () => rmSync(file, { force: true }))
}
