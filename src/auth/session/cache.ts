// Validated sessions kept in memory, so that a request with a session costs no database round trip,
// while a revoked session still fails on the very next request on every instance.
//
// PostgreSQL says when a cached row stops being true: triggers on "session" and "user"
// (migrations/0008_session_cache.ts) NOTIFY this channel on every update and delete, whoever
// writes, and each process LISTENs on a connection of its own (db/notifications.ts). The cache is
// used only while that listener is `current`: listening, hearing its own heartbeat (so no change
// older than 3 s is unheard, even on a link that died without closing), and having heard back
// every write this process made. While it is not (not yet connected, reconnecting, deaf, a write of
// ours in flight), every lookup goes to the database, and a lost connection empties the cache,
// since notifications missed while it was down are never replayed.
//
// A lookup that read the database while a notification arrived must not cache what it read (it may
// be what the notification just invalidated): it is cached only when the listener's version did not
// move in between.
import type { Listener, ListenOptions } from '../../../db/notifications.js'
import type { SignedInUser } from '../../user/types.js'
import type { SessionState } from './types.js'

/** The channel the triggers notify (the name is also written in the migration). */
export const SESSION_CACHE_CHANNEL = 'auth_cache'

export interface CachedSession {
  session: SessionState
  user: SignedInUser
}

export interface SessionCacheStats {
  hits: number
  misses: number
  evictions: number
  invalidations: number
}

/** What the app logs of its listener: each time it listens (again), and each connection lost. */
export interface ListenerReport {
  listening(): void
  lost(err: Error): void
}

const NO_TICKET = -1

/** An entry and its "used since the eviction sweep last passed it" bit (the CLOCK algorithm). */
interface Slot {
  value: CachedSession
  used: boolean
}

export class SessionCache {
  // Bounded by the CLOCK algorithm, an approximation of least-recently-used: a hit only sets its
  // slot's `used` bit, and eviction walks from the oldest entry (a Map iterates in insertion order),
  // giving each used entry a second chance at the end. Moving the entry to the end on every hit, as
  // an exact LRU does, churned the Map's hash table: a new multi-megabyte table every few seconds
  // under load, which the old generation kept until its next full collection.
  private readonly entries = new Map<string, Slot>()
  private readonly byUser = new Map<string, Set<string>>()
  private listener: Listener | undefined
  readonly stats: SessionCacheStats = { hits: 0, misses: 0, evictions: 0, invalidations: 0 }

  constructor(private readonly maxEntries: number) {}

  /** Starts listening; until the listener is current, the cache is bypassed. */
  listen(open: (options: ListenOptions) => Listener, report: ListenerReport): void {
    if (this.maxEntries === 0) return
    this.listener = open({
      channel: SESSION_CACHE_CHANNEL,
      onMessage: (payload) => this.invalidate(payload),
      onState: (listening) => {
        // Down or up again: whatever was cached may have changed unheard.
        this.clear()
        if (listening) report.listening()
      },
      onError: report.lost,
    })
  }

  get listening(): boolean {
    return this.listener?.listening ?? false
  }

  get size(): number {
    return this.entries.size
  }

  private get usable(): boolean {
    return this.listener?.current ?? false
  }

  get(tokenHash: string): CachedSession | undefined {
    if (!this.usable) return undefined
    const slot = this.entries.get(tokenHash)
    if (!slot) {
      this.stats.misses++
      return undefined
    }
    this.stats.hits++
    slot.used = true
    return slot.value
  }

  /** Taken before the database is read; `put` caches the row only if nothing was heard since. */
  ticket(): number {
    return this.usable ? this.listener!.version : NO_TICKET
  }

  put(tokenHash: string, value: CachedSession, ticket: number): void {
    if (ticket === NO_TICKET || !this.usable || this.listener!.version !== ticket) return
    // Shared by every request of this session from now on: nobody may change it.
    Object.freeze(value.session)
    if (value.user.profile.birthPlace) Object.freeze(value.user.profile.birthPlace)
    Object.freeze(value.user.profile)
    Object.freeze(value.user)
    this.forget(tokenHash)
    this.entries.set(tokenHash, { value, used: false })
    const tokens = this.byUser.get(value.user.id)
    if (tokens) tokens.add(tokenHash)
    else this.byUser.set(value.user.id, new Set([tokenHash]))
    while (this.entries.size > this.maxEntries) {
      const [oldest, slot] = this.entries.entries().next().value!
      if (slot.used) {
        // A second chance: to the end, its bit cleared. Terminates: every pass clears one bit.
        slot.used = false
        this.entries.delete(oldest)
        this.entries.set(oldest, slot)
      } else {
        this.forget(oldest)
        this.stats.evictions++
      }
    }
  }

  /** Drops one session; the request that ended or renewed it does this at once, the trigger for everyone else. */
  forget(tokenHash: string): void {
    const slot = this.entries.get(tokenHash)
    if (!slot) return
    this.entries.delete(tokenHash)
    const userId = slot.value.user.id
    const tokens = this.byUser.get(userId)
    tokens?.delete(tokenHash)
    if (tokens?.size === 0) this.byUser.delete(userId)
  }

  private invalidate(payload: string): void {
    this.stats.invalidations++
    if (payload.startsWith('s:')) this.forget(payload.slice(2))
    else if (payload.startsWith('u:')) {
      for (const tokenHash of this.byUser.get(payload.slice(2)) ?? []) this.forget(tokenHash)
    } else this.clear() // '*', or anything this version does not know: forgetting is always safe
  }

  clear(): void {
    this.entries.clear()
    this.byUser.clear()
  }

  async close(): Promise<void> {
    await this.listener?.close()
    this.clear()
  }
}
