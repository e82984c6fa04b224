// One Kysely instance per process: node-postgres when DATABASE_URL is set, else embedded PGlite.
import { PGlite } from '@electric-sql/pglite'
import { Kysely, PGliteDialect, PostgresDialect, sql, type Transaction } from 'kysely'
import pg from 'pg'
import {
  type Heartbeat,
  listenPglite,
  listenPostgres,
  type Listener,
  type ListenOptions,
  type PostgresListener,
} from './notifications.js'
import { PreparingClient } from './prepared.js'
import type { Database } from './schema.js'

export type { Database } from './schema.js'
export type DB = Kysely<Database>
/** What a query function runs on: the database, or the transaction its caller opened. */
export type Executor = Kysely<Database> | Transaction<Database>
/** A query that must run inside the caller's transaction. */
export type Trx = Transaction<Database>

export interface DatabaseHandle {
  db: DB
  kind: 'postgres' | 'pglite'
  /** Resolves when the database answers `select 1` within `timeoutMs`, else rejects. */
  ping(timeoutMs?: number): Promise<void>
  close(): Promise<void>
  /** Connections in use / idle / waiting (postgres only). */
  poolStats(): { total: number; idle: number; waiting: number }
  /** LISTEN on a connection of its own (db/notifications.ts). */
  listen(options: ListenOptions): Listener
}

export interface DatabaseOptions {
  url?: string
  pgliteDir: string
  poolSize: number
  onPoolError?: (err: Error) => void
  /** PostgreSQL only: the change listener's heartbeat, when not the default (tests shorten it). */
  heartbeat?: Heartbeat
  /** PGlite only: start from this dumped data directory (`dumpDataDir`) instead of an empty one. */
  pgliteSnapshot?: Blob
}

const INT8 = 20
const DATE = 1082

// Dates stay 'YYYY-MM-DD' strings (no time-zone shift); counts and sums arrive as numbers.
const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === DATE) return (value: string) => value
    if (oid === INT8) return (value: string) => Number(value)
    return pg.types.getTypeParser(oid, format as 'text')
  },
}

export async function openDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  if (options.url) {
    const pool = new pg.Pool({
      Client: PreparingClient,
      connectionString: options.url,
      max: options.poolSize,
      connectionTimeoutMillis: 1500,
      idleTimeoutMillis: 30_000,
      statement_timeout: 15_000,
      // statement_timeout needs a server that answers; this bounds a query on a silent network too.
      query_timeout: 20_000,
      types: pgTypes,
    })
    // A client losing its server must not crash the process. The pool listens on idle clients only;
    // a checked-out client that errors (e.g. ECONNRESET while writing a query) would emit 'error'
    // with no listener, an uncaught exception. Its query still fails (-> 503) and the pool drops it.
    pool.on('error', (err) => options.onPoolError?.(err))
    pool.on('connect', (client) => {
      client.on('error', (err) => options.onPoolError?.(err))
    })
    // A connection that wrote to a watched table is back in the pool, its transaction over: every
    // listener of this process fences, so that this process hears its own write before it trusts
    // what it remembers again (db/notifications.ts).
    const listeners = new Set<PostgresListener>()
    pool.on('release', (_err, client) => {
      const preparing = client as unknown as PreparingClient
      if (!preparing.wroteWatchedTable) return
      preparing.wroteWatchedTable = false
      for (const listener of listeners) listener.fence()
    })
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
    return {
      db,
      kind: 'postgres',
      ping: (timeoutMs = 1000) => withTimeout(sql`select 1`.execute(db), timeoutMs),
      close: () => db.destroy(),
      poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
      listen: (listenOptions) => {
        const listener = listenPostgres(options.url!, listenOptions, {
          heartbeat: options.heartbeat,
          onClose: () => listeners.delete(listener),
        })
        listeners.add(listener)
        return listener
      },
    }
  }
  const dataDir = options.pgliteDir === 'memory://' ? undefined : options.pgliteDir
  const pglite = await PGlite.create(dataDir, {
    parsers: { [DATE]: (value: string) => value, [INT8]: (value: string) => Number(value) },
    loadDataDir: options.pgliteSnapshot,
  })
  const db = new Kysely<Database>({ dialect: new PGliteDialect({ pglite }) })
  return {
    db,
    kind: 'pglite',
    ping: (timeoutMs = 1000) => withTimeout(sql`select 1`.execute(db), timeoutMs),
    close: async () => {
      await db.destroy()
      if (!pglite.closed) await pglite.close()
    },
    poolStats: () => ({ total: 1, idle: 1, waiting: 0 }),
    listen: (listenOptions) => listenPglite(pglite, listenOptions),
  }
}

async function withTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      promise,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`database did not answer within ${ms} ms`)), ms)
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

/** jsonb parameters are sent as JSON text: node-postgres would turn a JS array into a Postgres array. */
export const json = (value: unknown) => JSON.stringify(value)
