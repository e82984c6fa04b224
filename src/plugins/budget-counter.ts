// The one way a budget is counted: at most `limit` takes per key in a fixed window that starts at
// the key's first take. A refused take is not counted, so a take given back (`refund`, for work that
// was never done) is a place freed, whatever was refused meanwhile, in the window it was taken in
// and never in a later one. Two stores behind one interface:
// this process's memory (one instance, or no Redis), and Redis (one Lua script, atomic, shared by
// every instance). With Redis configured, `RedisOrMemory` counts in Redis while it answers and in
// this instance's memory while it does not: the budgets still hold (per instance) and the service
// stays up. Refusing every sign-in while Redis is away would make an optional cache a single point
// of failure; counting nothing would hand a guesser unlimited attempts for the outage.
import type { Redis } from 'ioredis'
import type { MaybePromise } from '../shared/maybe-async.js'

/** The outcome of one take. */
export interface Take {
  allowed: boolean
  /** Takes left in the window after this one. */
  remaining: number
  /** When the window ends, in milliseconds since the epoch (the app's clock). */
  resetAt: number
}

export interface BudgetCounter {
  /** Takes one from `key`'s budget of `limit` per `windowMs`; a refused take is not counted. */
  take(key: string, limit: number, windowMs: number): MaybePromise<Take>
  /**
   * Gives back `taken`, a take whose work was never done, to the window it was taken in: not once
   * that window has ended, and never to a later one.
   */
  refund(key: string, taken: Take): MaybePromise<void>
}

interface Window {
  count: number
  resetAt: number
}

/**
 * Windows in this process's memory. One counter per budget: its windows all have one length, so
 * the map's order (a window is re-inserted when it starts) is the order they end in, and past
 * `maxKeys` keys the oldest window, the first to end, is dropped. Answers at once, without a
 * promise: the global budget is taken on every request (docs/benchmarks.md, "The request pipeline").
 */
export class MemoryCounter implements BudgetCounter {
  private readonly windows = new Map<string, Window>()

  constructor(
    private readonly now: () => number,
    private readonly maxKeys = 10_000,
  ) {}

  take(key: string, limit: number, windowMs: number): Take {
    const now = this.now()
    let window = this.windows.get(key)
    if (!window || window.resetAt <= now) {
      this.windows.delete(key)
      if (this.windows.size >= this.maxKeys) this.windows.delete(this.windows.keys().next().value!)
      window = { count: 0, resetAt: now + windowMs }
      this.windows.set(key, window)
    }
    if (window.count >= limit) return { allowed: false, remaining: 0, resetAt: window.resetAt }
    window.count++
    return { allowed: true, remaining: limit - window.count, resetAt: window.resetAt }
  }

  refund(key: string, taken: Take): void {
    const window = this.windows.get(key)
    if (window && window.resetAt === taken.resetAt && window.resetAt > this.now() && window.count > 0) window.count--
  }
}

/**
 * KEYS[1] counts the window's takes; ARGV: window length (ms), limit, 'take' or 'refund'.
 * Returns {allowed (1|0), count, milliseconds left in the window}. A key without an expiry (none,
 * or one left without it) starts a new window, so no count can outlive its window. A refund's ARGV[1]
 * is the time its take's window had left, as the caller reckons it now: a live window with more left
 * than that (beyond REFUND_SLACK_MS of clock noise) started after the take, and is not refunded.
 */
const REFUND_SLACK_MS = 50
const SCRIPT = `
if ARGV[3] == 'refund' then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 and ttl <= tonumber(ARGV[1]) + ${REFUND_SLACK_MS} and tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then
    redis.call('DECR', KEYS[1])
  end
  return {0, 0, 0}
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('SET', KEYS[1], 0, 'PX', ARGV[1])
  ttl = tonumber(ARGV[1])
end
local count = tonumber(redis.call('GET', KEYS[1]))
if count >= tonumber(ARGV[2]) then return {0, count, ttl} end
return {1, redis.call('INCR', KEYS[1]), ttl}
`

type BudgetScript = (key: string, windowMs: number, limit: number, op: 'take' | 'refund') => Promise<[number, number, number]>

/** Windows in Redis, shared by every instance, each key under `prefix`. Always answers with a promise. */
export class RedisCounter implements BudgetCounter {
  private readonly script: BudgetScript

  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly now: () => number,
  ) {
    // Sent once, then called by its SHA (ioredis loads it again if Redis forgot it).
    if (!('budgetWindow' in redis)) redis.defineCommand('budgetWindow', { numberOfKeys: 1, lua: SCRIPT })
    const commands = redis as unknown as { budgetWindow: BudgetScript }
    this.script = commands.budgetWindow.bind(redis)
  }

  async take(key: string, limit: number, windowMs: number): Promise<Take> {
    const [allowed, count, ttl] = await this.script(this.prefix + key, windowMs, limit, 'take')
    return { allowed: allowed === 1, remaining: Math.max(0, limit - count), resetAt: this.now() + ttl }
  }

  async refund(key: string, taken: Take): Promise<void> {
    const left = taken.resetAt - this.now()
    if (left <= 0) return
    await this.script(this.prefix + key, left, 0, 'refund')
  }
}

/** Told when Redis failed a command and when it answered one again, so an outage is logged once. */
export interface FallbackWatch {
  fellBack(err: unknown): void
  answered(): void
}

/** Redis while it answers, else this instance's memory (see the top of this file). */
export class RedisOrMemory implements BudgetCounter {
  constructor(
    private readonly redis: Redis,
    private readonly shared: RedisCounter,
    private readonly local: MemoryCounter,
    private readonly watch: FallbackWatch,
  ) {}

  take(key: string, limit: number, windowMs: number): MaybePromise<Take> {
    // A connection known to be down costs no round trip (and was logged by plugins/redis.ts).
    if (this.redis.status !== 'ready') return this.local.take(key, limit, windowMs)
    return this.shared.take(key, limit, windowMs).then(
      (take) => {
        this.watch.answered()
        return take
      },
      (err: unknown) => {
        this.watch.fellBack(err)
        return this.local.take(key, limit, windowMs)
      },
    )
  }

  refund(key: string, taken: Take): MaybePromise<void> {
    if (this.redis.status !== 'ready') return this.local.refund(key, taken)
    return this.shared.refund(key, taken).then(
      () => this.watch.answered(),
      (err: unknown) => {
        this.watch.fellBack(err)
        this.local.refund(key, taken)
      },
    )
  }
}
