// LISTEN on one channel, on a connection of its own. PostgreSQL delivers a NOTIFY at commit, and only
// to sessions that LISTEN on their own connection: a pooled connection (or PgBouncer in transaction
// mode) would lose it, so the listener is a dedicated pg.Client, never one from the pool. When that
// connection fails it says so (`onState(false)`) at once and comes back with backoff.
// PGlite (one process, one in-process connection) has its own listen() and cannot go away; it calls
// the listener before the writing statement's promise resolves, so a write is heard at once.
//
// A connection can also die without closing: packets dropped on a half-broken link, a server that
// went away, and neither end's socket notices for minutes. So the listener asks itself, every
// second, whether it still hears: it NOTIFYs a channel only it listens on (the heartbeat) and
// counts itself deaf when no heartbeat it sent in the last `deadAfterMs` came back. Notifications
// arrive in commit order, so hearing a heartbeat sent at time T proves every change committed
// before T was heard: while the listener says it is listening, no change older than `deadAfterMs`
// is unheard. Deaf, it is not listening at once (the cache is bypassed from that moment, not from
// when a timer notices), and the connection is replaced at the next beat. TCP keepalive lets the
// kernel drop a dead socket too, but cannot bound anything: a proxy or a stalled server answers
// its probes.
//
// Hearing one's own writes: on PostgreSQL the listener hears a notification a moment after the
// commit that sent it, so a request right after a write on this very process could still see what
// the write changed. So the pool tells the listener whenever a connection that wrote to a watched
// table goes back to the pool (after its commit); the listener then sends a "fence" notification
// to itself and is not `current` until it hears it back. Notifications arrive in commit order, so
// by then it has heard everything the write caused.
import { randomBytes } from 'node:crypto'
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
  /** Listening, and every write of this process to a watched table has been heard back. */
  readonly current: boolean
  /**
   * Moves on every notification heard, every fence sent and every change of state: a value read
   * before a database read and found unchanged after it means nothing was heard in between.
   */
  readonly version: number
  close(): Promise<void>
}

/**
 * True for a statement that may fire the change triggers (migrations/0008_session_cache.ts): an
 * UPDATE, DELETE or TRUNCATE of "user" or "session", or an upsert into them. A plain INSERT fires
 * none. Reading the SQL text errs on the side of a fence too many, which costs one notification.
 */
export function writesWatchedTable(text: string): boolean {
  return WATCHED_WRITE.test(text) || (WATCHED_INSERT.test(text) && UPSERT.test(text))
}

const TABLE = String.raw`\s+(?:only\s+)?(?:table\s+)?"?(?:user|session)"?(?![\w$])`
const WATCHED_WRITE = new RegExp(String.raw`\b(?:update|delete\s+from|truncate)${TABLE}`, 'i')
const WATCHED_INSERT = new RegExp(String.raw`\binsert\s+into${TABLE}`, 'i')
const UPSERT = /\bdo\s+update\b/i

/** How often the listener checks that it still hears, and how long a silence makes it deaf. */
export interface Heartbeat {
  everyMs: number
  /** Deaf once no heartbeat sent within this time has come back: the most a change can go unheard. */
  deadAfterMs: number
}

export const HEARTBEAT: Heartbeat = { everyMs: 1_000, deadAfterMs: 3_000 }

const BACKOFF_MIN_MS = 100
const BACKOFF_MAX_MS = 5_000

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`

/** The PostgreSQL listener, with the fence the pool asks for after a watched write. */
export interface PostgresListener extends Listener {
  fence(): void
}

export interface PostgresListenerOptions {
  heartbeat?: Heartbeat
  /** Runs when the listener is closed (the pool stops asking it to fence). */
  onClose?(): void
}

export function listenPostgres(url: string, options: ListenOptions, more: PostgresListenerOptions = {}): PostgresListener {
  const { everyMs, deadAfterMs } = more.heartbeat ?? HEARTBEAT
  let client: pg.Client | undefined
  let listening = false
  let closed = false
  let version = 0
  let backoff = BACKOFF_MIN_MS
  let retry: NodeJS.Timeout | undefined
  let beat: NodeJS.Timeout | undefined
  // Heartbeats and fences go to a channel of this listener's own, so no other instance wakes for
  // them. A payload is `sequence:sent at`; a fence is also kept in `pending` until heard.
  const self = `${options.channel}_self_${randomBytes(6).toString('hex')}`
  let sent = 0
  const pending = new Map<string, NodeJS.Timeout>()
  // When the latest heartbeat or fence heard back was sent (performance.now(), which never jumps).
  let heardUpTo = 0
  const deaf = () => performance.now() - heardUpTo > deadAfterMs
  // The listening connection's own queries (heartbeats, fences) go one after another: node-postgres
  // queues a query sent while another runs, but deprecates that, and pg 9 will refuse it.
  let inTurn: Promise<unknown> = Promise.resolve()
  const send = (current: pg.Client, text: string, values?: unknown[]): void => {
    inTurn = inTurn.then(() => current.query(text, values)).catch((err: Error) => drop(current, err))
  }
  const notifySelf = (current: pg.Client): string => {
    const payload = `${++sent}:${performance.now()}`
    // Sent on the listening connection itself: a session hears its own notifications.
    send(current, 'select pg_notify($1, $2)', [self, payload])
    return payload
  }
  const deafness = () => new Error(`no heartbeat heard back within ${deadAfterMs} ms`)

  const setListening = (value: boolean) => {
    version++
    for (const timer of pending.values()) clearTimeout(timer)
    pending.clear()
    if (listening === value) return
    listening = value
    options.onState(value)
  }

  const drop = (current: pg.Client, err?: Error) => {
    if (current !== client) return
    client = undefined
    clearInterval(beat)
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

  const hear = (current: pg.Client, channel: string, payload: string) => {
    if (channel === options.channel) {
      version++
      options.onMessage(payload)
      return
    }
    if (channel !== self) return
    // Heard too late: the cache was already bypassed as deaf, and stays so until a new connection.
    if (deaf()) return drop(current, deafness())
    heardUpTo = Math.max(heardUpTo, Number(payload.slice(payload.indexOf(':') + 1)) || 0)
    const timer = pending.get(payload)
    if (timer) {
      clearTimeout(timer)
      pending.delete(payload)
    }
  }

  const connect = async () => {
    if (closed) return
    const current = new pg.Client({
      connectionString: url,
      // Found by name in pg_stat_activity (operators, the listener-kill test).
      application_name: `listen ${options.channel}`,
      keepAlive: true,
      keepAliveInitialDelayMillis: deadAfterMs,
      connectionTimeoutMillis: 2_000,
      query_timeout: 3_000,
    })
    client = current
    inTurn = Promise.resolve() // nothing of a dropped connection holds up the new one
    current.on('error', (err) => drop(current, err))
    current.on('end', () => drop(current, new Error('listener connection ended')))
    current.on('notification', (message) => {
      if (message.payload !== undefined) hear(current, message.channel, message.payload)
    })
    // What is heard from now on was committed after this point (the LISTEN's own commit).
    let listenedAt = 0
    try {
      await current.connect()
      listenedAt = performance.now()
      await current.query(`listen ${quoteIdent(self)}; listen ${quoteIdent(options.channel)}`)
    } catch (err) {
      drop(current, err as Error)
      return
    }
    if (current !== client) return
    heardUpTo = listenedAt
    backoff = BACKOFF_MIN_MS
    beat = setInterval(() => (deaf() ? drop(current, deafness()) : notifySelf(current)), everyMs)
    beat.unref()
    setListening(true)
  }

  void connect()
  const isListening = () => listening && !deaf()
  return {
    get listening() {
      return isListening()
    },
    get current() {
      return isListening() && pending.size === 0
    },
    get version() {
      return version
    },
    fence() {
      const current = client
      if (!listening || !current) return // not current anyway; a new connection starts from nothing
      version++
      const payload = notifySelf(current)
      const timer = setTimeout(() => drop(current, new Error('a fence notification was not heard back')), deadAfterMs)
      timer.unref()
      pending.set(payload, timer)
    },
    async close() {
      closed = true
      more.onClose?.()
      clearTimeout(retry)
      const current = client
      if (current) drop(current)
    },
  }
}

export function listenPglite(pglite: PGlite, options: ListenOptions): Listener {
  let listening = false
  let closed = false
  let version = 0
  const subscribed = pglite
    .listen(options.channel, (payload) => {
      version++
      options.onMessage(payload)
    })
    .then(
      (unsubscribe) => {
        if (closed) return unsubscribe
        version++
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
    // PGlite calls the listener before the writing statement resolves: nothing is ever in flight.
    get current() {
      return listening
    },
    get version() {
      return version
    },
    async close() {
      closed = true
      version++
      if (listening) options.onState(false)
      listening = false
      const unsubscribe = await subscribed
      if (unsubscribe && !pglite.closed) await unsubscribe().catch(() => {})
    },
  }
}
