// LISTEN on one channel, on a connection of its own. PostgreSQL delivers a NOTIFY at commit, and only
// to sessions that LISTEN on their own connection: a pooled connection (or PgBouncer in transaction
// mode) would lose it, so the listener is a dedicated pg.Client, never one from the pool. When that
// connection fails it says so (`onState(false)`) at once and comes back with backoff; a heartbeat
// catches a connection that died without closing (a half-open TCP link, a server that went away).
// PGlite (one process, one in-process connection) has its own listen() and cannot go away.
import type { PGlite } from '@electric-sql/pglite'
import pg from 'pg'

export interface ListenOptions {
  channel: string
  onMessage(payload: string): void
  /** True once LISTEN is in effect; false as soon as the connection is lost or closing. */
  onState(listening: boolean): void
  onError?(err: Error): void
}

export interface Listener {
  readonly listening: boolean
  close(): Promise<void>
}

const BACKOFF_MIN_MS = 100
const BACKOFF_MAX_MS = 5_000
const HEARTBEAT_MS = 5_000

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`

export function listenPostgres(url: string, options: ListenOptions): Listener {
  let client: pg.Client | undefined
  let listening = false
  let closed = false
  let backoff = BACKOFF_MIN_MS
  let retry: NodeJS.Timeout | undefined
  let heartbeat: NodeJS.Timeout | undefined

  const setListening = (value: boolean) => {
    if (listening === value) return
    listening = value
    options.onState(value)
  }

  const drop = (current: pg.Client, err?: Error) => {
    if (current !== client) return
    client = undefined
    clearInterval(heartbeat)
    setListening(false)
    if (err) options.onError?.(err)
    current.removeAllListeners('notification')
    current.on('error', () => {}) // a late error of a dropped client must not crash the process
    current.end().catch(() => {})
    if (!closed) {
      retry = setTimeout(connect, backoff)
      retry.unref()
      backoff = Math.min(backoff * 2, BACKOFF_MAX_MS)
    }
  }

  const connect = async () => {
    if (closed) return
    const current = new pg.Client({
      connectionString: url,
      keepAlive: true,
      connectionTimeoutMillis: 2_000,
      query_timeout: 3_000,
    })
    client = current
    current.on('error', (err) => drop(current, err))
    current.on('end', () => drop(current, new Error('listener connection ended')))
    current.on('notification', (message) => {
      if (message.channel === options.channel && message.payload !== undefined) options.onMessage(message.payload)
    })
    try {
      await current.connect()
      await current.query(`listen ${quoteIdent(options.channel)}`)
    } catch (err) {
      drop(current, err as Error)
      return
    }
    if (current !== client) return
    backoff = BACKOFF_MIN_MS
    heartbeat = setInterval(() => {
      current.query('select 1').catch((err: Error) => drop(current, err))
    }, HEARTBEAT_MS)
    heartbeat.unref()
    setListening(true)
  }

  void connect()
  return {
    get listening() {
      return listening
    },
    async close() {
      closed = true
      clearTimeout(retry)
      const current = client
      if (current) drop(current)
    },
  }
}

export function listenPglite(pglite: PGlite, options: ListenOptions): Listener {
  let listening = false
  let closed = false
  const subscribed = pglite.listen(options.channel, options.onMessage).then(
    (unsubscribe) => {
      if (closed) return unsubscribe
      listening = true
      options.onState(true)
      return unsubscribe
    },
    (err: Error) => {
      options.onError?.(err)
      return undefined
    },
  )
  return {
    get listening() {
      return listening
    },
    async close() {
      closed = true
      if (listening) options.onState(false)
      listening = false
      const unsubscribe = await subscribed
      if (unsubscribe && !pglite.closed) await unsubscribe().catch(() => {})
    },
  }
}
