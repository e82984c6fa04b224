// The rate-limit budgets: a global per-IP budget, named
// budgets that routes declare in their policy (sign-in and sign-up per IP, sign-in and mail per
// email), a per-account count of password re-verifications, and the per-account and per-IP
// budgets of Argon2 operations (auth/password/admission.ts takes from them). The route policy hook
// (plugins/route-policy.ts) decides which apply to a request; this module only counts.
// Counted in this process's memory by default (MemoryWindows); through @fastify/rate-limit's Redis
// store when REDIS_URL is set, so every instance shares one budget. If Redis is down, requests are counted in memory rather than refused: the limiter must
// not take the API down.
import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import { AppError } from '../shared/errors.js'
import type { MaybePromise } from '../shared/maybe-async.js'
import type { EmailBudget, IpBudget } from '../shared/route-policy.js'

const MINUTE = 60_000
const HOUR = 60 * MINUTE

interface Budget {
  max: number
  windowMs: number
}

/** A request counted against a budget; `retryAfter` in seconds when it is spent. */
export interface Verdict {
  exceeded: boolean
  retryAfter: number
}

const WITHIN_BUDGET: Verdict = Object.freeze({ exceeded: false, retryAfter: 0 })

/** Counts one request against a budget: at once in memory, through a promise in Redis. */
export type Check = (request: FastifyRequest) => MaybePromise<Verdict>

export interface RateLimits {
  global: Check
  perIp: Record<IpBudget, Check>
  perEmail: Record<EmailBudget, Check>
  /** Attempts at "your current password", per account, right answers included. */
  passwordChecks: AttemptCounter
  /** Argon2 operations per account (or per address without one) and per client IP, right answers included. */
  hashes: { perAccount: AttemptCounter; perIp: AttemptCounter }
}

declare module 'fastify' {
  interface FastifyInstance {
    rateLimits: RateLimits
    /**
     * Takes one mail from the recipient's hourly budget (shared with the mail routes' limit).
     * False when it is spent: the caller then skips sending instead of failing the request.
     */
    takeMailBudget(request: FastifyRequest, email: string): Promise<boolean>
  }
}

/**
 * The budget key of a client address. An IPv6 client usually holds a whole /64 (its provider hands
 * out prefixes, and it may pick any address in one), so the /64 is the key; an IPv4 address, or an
 * IPv4-mapped IPv6 one, is its own key.
 */
export function clientKey(ip: string): string {
  if (!ip.includes(':')) return ip
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  if (mapped) return mapped[1]!
  const [head = '', tail = ''] = ip.split('%', 1)[0]!.split('::')
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const groups = ip.includes('::') ? [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left
  return `${groups
    .slice(0, 4)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`
}

export const rateLimited = (retryAfter: number) =>
  new AppError(429, 'RATE_LIMITED', 'Too many requests, try again later', { retryAfter: Math.max(1, retryAfter) })

export const emailOf = (request: FastifyRequest) =>
  String((request.body as { email?: unknown } | undefined)?.email ?? '').toLowerCase()

/**
 * Attempts per key in a fixed window, keyed by any string (an account, not a request): `take`
 * claims an attempt before the caller does the work (atomically, so a burst of parallel requests
 * cannot all pass a check made before any of them is counted); a refused attempt is not counted.
 * `refund` gives one back when the work was never done (never for a right answer: a right password
 * costs the hash workers what a wrong one does). Redis when it is available (shared by every
 * instance), else memory; a Redis error falls back to memory.
 */
export class AttemptCounter {
  private readonly memory = new Map<string, { count: number; resetAt: number }>()

  constructor(
    private readonly redis: Redis | null,
    private readonly prefix: string,
    private readonly budget: Budget,
    private readonly now: () => number = Date.now,
  ) {}

  /** Claims one attempt: 0 when allowed, else the seconds until the window ends (nothing claimed). */
  async take(key: string): Promise<number> {
    if (this.redis?.status === 'ready') {
      try {
        // The window starts at the first attempt; a refused attempt is not counted.
        const [count, ttl] = (await this.redis.eval(
          `local n = redis.call('INCR', KEYS[1])
           if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
           if n > tonumber(ARGV[2]) then redis.call('DECR', KEYS[1]) end
           return {n, redis.call('PTTL', KEYS[1])}`,
          1,
          this.prefix + key,
          this.budget.windowMs,
          this.budget.max,
        )) as [number, number]
        return count > this.budget.max ? Math.max(1, Math.ceil(ttl / 1000)) : 0
      } catch {
        // fall through to the memory count
      }
    }
    const now = this.now()
    if (this.memory.size > 10_000) for (const [k, e] of this.memory) if (e.resetAt <= now) this.memory.delete(k)
    let entry = this.memory.get(key)
    if (!entry || entry.resetAt <= now) {
      entry = { count: 0, resetAt: now + this.budget.windowMs }
      this.memory.set(key, entry)
    }
    if (entry.count >= this.budget.max) return Math.max(1, Math.ceil((entry.resetAt - now) / 1000))
    entry.count++
    return 0
  }

  /** Gives back an attempt `take` claimed whose work was never done. */
  async refund(key: string): Promise<void> {
    if (this.redis?.status === 'ready') {
      try {
        await this.redis.eval("if redis.call('GET', KEYS[1]) then redis.call('DECR', KEYS[1]) end return 0", 1, this.prefix + key)
        return
      } catch {
        // fall through to the memory count
      }
    }
    const entry = this.memory.get(key)
    if (entry && entry.count > 0) entry.count--
  }
}

/**
 * Fixed windows per key in this process's memory: what @fastify/rate-limit's local store counts
 * (the window starts at a key's first request; every request counts), without its per-call cost on
 * every request that the global budget covers (docs/benchmarks.md, "The request pipeline"). Bounded: past
 * `maxKeys` keys the oldest window is dropped, as the local store's LRU of 10,000 does.
 */
export class MemoryWindows {
  private readonly windows = new Map<string, { count: number; resetAt: number }>()

  constructor(
    private readonly budget: Budget,
    private readonly now: () => number,
    private readonly maxKeys = 10_000,
  ) {}

  take(key: string): Verdict {
    const now = this.now()
    let window = this.windows.get(key)
    if (!window || window.resetAt <= now) {
      this.windows.delete(key)
      if (this.windows.size >= this.maxKeys) this.windows.delete(this.windows.keys().next().value!)
      window = { count: 0, resetAt: now + this.budget.windowMs }
      this.windows.set(key, window)
    }
    window.count++
    if (window.count <= this.budget.max) return WITHIN_BUDGET
    return { exceeded: true, retryAfter: Math.max(1, Math.ceil((window.resetAt - now) / 1000)) }
  }
}

export default fp(
  async function rateLimits(app: FastifyInstance) {
    const limits = app.config.rateLimit
    const redis = app.redis ?? undefined
    if (redis && redis.status !== 'ready') {
      // Give a starting Redis a moment, so the first requests are counted in the shared store.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 1000)
        redis.once('ready', () => {
          clearTimeout(timer)
          resolve()
        })
      })
    }

    await app.register(rateLimit, {
      global: false,
      skipOnError: true,
      redis,
      nameSpace: `${app.config.redisKeyPrefix}rl:`,
      cache: 10_000,
    })

    const now = () => app.clock.now().getTime()
    const checker = (name: string, budget: Budget, key: (request: FastifyRequest) => string): Check => {
      if (!redis) {
        const windows = new MemoryWindows(budget, now)
        return (request) => windows.take(key(request))
      }
      const run = app.createRateLimit({
        max: budget.max,
        timeWindow: budget.windowMs,
        keyGenerator: (request) => `${name}:${key(request)}`,
      })
      return async (request): Promise<Verdict> => {
        const result = await run(request)
        if (result.isAllowed) return WITHIN_BUDGET
        return { exceeded: result.isExceeded, retryAfter: result.ttlInSeconds }
      }
    }

    // One mail budget per recipient, whichever route or sign-in sends the mail. The memory store
    // is per checker, so the budget must be one checker; its key is the body's email unless a
    // caller names the recipient.
    const recipient = new WeakMap<FastifyRequest, string>()
    const mail = checker('mail', { max: limits.mailPerHour, windowMs: HOUR }, (r) => recipient.get(r) ?? emailOf(r))

    app.decorate('rateLimits', {
      global: checker('global', { max: limits.globalPerMinute, windowMs: MINUTE }, (r) => clientKey(r.ip)),
      perIp: {
        signIn: checker('sign-in:ip', { max: limits.signInIpPerMinute, windowMs: MINUTE }, (r) => clientKey(r.ip)),
        signUp: checker('sign-up:ip', { max: limits.signUpIpPerMinute, windowMs: MINUTE }, (r) => clientKey(r.ip)),
      },
      perEmail: {
        signIn: checker('sign-in:email', { max: limits.signInEmailPerMinute, windowMs: MINUTE }, emailOf),
        mail,
      },
      passwordChecks: new AttemptCounter(
        app.redis,
        `${app.config.redisKeyPrefix}rl:password-check:`,
        { max: limits.passwordChecksPerMinute, windowMs: MINUTE },
        now,
      ),
      hashes: {
        perAccount: new AttemptCounter(
          app.redis,
          `${app.config.redisKeyPrefix}rl:hash:account:`,
          { max: limits.hashesPerAccountPerMinute, windowMs: MINUTE },
          now,
        ),
        perIp: new AttemptCounter(
          app.redis,
          `${app.config.redisKeyPrefix}rl:hash:ip:`,
          { max: limits.hashesPerIpPerMinute, windowMs: MINUTE },
          now,
        ),
      },
    } satisfies RateLimits)

    app.decorate('takeMailBudget', async (request: FastifyRequest, email: string) => {
      recipient.set(request, email.toLowerCase())
      try {
        return !(await mail(request)).exceeded
      } finally {
        recipient.delete(request)
      }
    })
  },
  { name: 'rate-limit', dependencies: ['redis'] },
)
