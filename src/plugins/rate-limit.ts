// The rate-limit budgets: a global per-IP budget, named budgets that routes declare in their policy
// (sign-in and sign-up per IP, sign-in per email, mail per address and client), a per-account count of password
// re-verifications, and the per-account and per-IP budgets of Argon2 operations
// (auth/password/admission.ts takes from them). The route policy hook (plugins/route-policy.ts)
// decides which apply to a request; this module only names them, and each is counted by the one
// counter of budget-counter.ts: in this process's memory without REDIS_URL, in Redis with it, so
// every instance shares one budget.
// When Redis is down, every budget is counted in this instance's memory until it is back (logged
// once): the limits still hold, per instance, and no request is refused for want of Redis.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../shared/errors.js'
import { andThen, type MaybePromise } from '../shared/maybe-async.js'
import type { IpBudget } from '../shared/route-policy.js'
import { type BudgetCounter, MemoryCounter, RedisCounter, RedisOrMemory, type Take } from './budget-counter.js'

const MINUTE = 60_000
const HOUR = 60 * MINUTE

/** Budgets keyed by an account or an address, never capped low enough for a flood of other keys to push a victim's window out. */
const ATTEMPT_KEYS = 100_000

/** One named budget: `limit` takes per key per window, counted by one store. */
export class Budget {
  constructor(
    readonly limit: number,
    readonly windowMs: number,
    private readonly counter: BudgetCounter,
    private readonly now: () => number,
  ) {}

  take(key: string): MaybePromise<Take> {
    return this.counter.take(key, this.limit, this.windowMs)
  }

  /** Takes one, or throws 429 RATE_LIMITED with the seconds until the window ends (nothing taken). */
  spend(key: string): MaybePromise<void> {
    return andThen(this.claim(key), () => undefined)
  }

  /** `spend`, returning the take, which a refund gives back. */
  claim(key: string): MaybePromise<Take> {
    return andThen(this.take(key), (take) => allowedOrRefused(take, this.now()))
  }

  /** Gives back `taken`, whose work was never done, to the window it came from. */
  refund(key: string, taken: Take): MaybePromise<void> {
    return this.counter.refund(key, taken)
  }
}

/** The take when it was allowed; else 429 RATE_LIMITED with the seconds until its window ends. */
function allowedOrRefused(take: Take, now: number): Take {
  if (!take.allowed) throw rateLimited(Math.ceil((take.resetAt - now) / 1000))
  return take
}

/** Who asks for mail to an address: the client, and whether it is the address's owner. */
export interface Asker {
  ip: string
  /**
   * Whether the asker is the owner of the address's account (a browser that has signed in to it):
   * asked only when the client's own allowance has a place left.
   */
  isOwner: () => boolean | Promise<boolean>
}

/**
 * Mail to an address: each client (IP, or IPv6 /64) has its own hourly allowance for it, and the
 * address has an hourly cap over every client. Anyone may ask for a mail to any address, so an
 * allowance of the address alone would let one stranger spend its owner's codes and links for the
 * hour; the cap bounds what many clients together can send to one inbox. Strangers on several
 * clients can still spend the cap, so the owner's own browser (one that has signed in to the
 * account) is not held to it, only to its client's allowance.
 */
export class MailBudget {
  constructor(
    private readonly perClient: Budget,
    private readonly perAddress: Budget,
    private readonly now: () => number,
  ) {}

  async take(email: string, asker: Asker): Promise<Take> {
    const address = email.toLowerCase()
    const clientTake = `${clientKey(asker.ip)} ${address}`
    const fromClient = await this.perClient.take(clientTake)
    if (!fromClient.allowed || (await asker.isOwner())) return fromClient
    const toAddress = await this.perAddress.take(address)
    // Refused by the cap: the client's allowance is given back, nothing was sent.
    if (!toAddress.allowed) await this.perClient.refund(clientTake, fromClient)
    return toAddress
  }

  async spend(email: string, asker: Asker): Promise<void> {
    allowedOrRefused(await this.take(email, asker), this.now())
  }
}

export interface RateLimits {
  global: Budget
  perIp: Record<IpBudget, Budget>
  /** Budgets keyed by the body's email: sign-in attempts per address, and mail (per address and client). */
  perEmail: { signIn: Budget; mail: MailBudget }
  /** Attempts at "your current password", per account, right answers included. */
  passwordChecks: Budget
  /** Argon2 operations per account (or per address without one) and per client IP, right answers included. */
  hashes: { perAccount: Budget; perIp: Budget }
}

declare module 'fastify' {
  interface FastifyInstance {
    rateLimits: RateLimits
    /**
     * Takes one mail to `email` asked for by `asker` (the mail routes' per-email limit).
     * False when it is spent: the caller then skips sending instead of failing the request.
     */
    takeMailBudget(email: string, asker: Asker): Promise<boolean>
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

export default fp(
  async function rateLimits(app: FastifyInstance) {
    const limits = app.config.rateLimit
    const redis = app.redis
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

    const now = () => app.clock.now().getTime()
    // A lost connection is logged by plugins/redis.ts; a command that fails on a connection still
    // up (a timeout, an error) is logged here, once until Redis answers again.
    let failing = false
    const watch = {
      fellBack(err: unknown) {
        if (failing) return
        failing = true
        app.log.warn({ err: { message: (err as Error).message } }, "redis unavailable: budgets counted in this instance's memory")
      },
      answered() {
        if (!failing) return
        failing = false
        app.log.info('redis answers again: budgets shared')
      },
    }
    const budget = (name: string, limit: number, windowMs: number, maxKeys?: number) => {
      const local = new MemoryCounter(now, maxKeys)
      const counter = redis
        ? new RedisOrMemory(redis, new RedisCounter(redis, `${app.config.redisKeyPrefix}rl:${name}:`, now), local, watch)
        : local
      return new Budget(limit, windowMs, counter, now)
    }

    // Keyed by what a caller chooses (an address): a flood of other keys must not evict a victim's.
    const mail = new MailBudget(
      budget('mail', limits.mailPerHour, HOUR, ATTEMPT_KEYS),
      budget('mail:address', limits.mailPerAddressPerHour, HOUR, ATTEMPT_KEYS),
      now,
    )
    app.decorate('rateLimits', {
      global: budget('global', limits.globalPerMinute, MINUTE),
      perIp: {
        signIn: budget('sign-in:ip', limits.signInIpPerMinute, MINUTE, ATTEMPT_KEYS),
        signUp: budget('sign-up:ip', limits.signUpIpPerMinute, MINUTE),
      },
      perEmail: {
        signIn: budget('sign-in:email', limits.signInEmailPerMinute, MINUTE, ATTEMPT_KEYS),
        // One mail budget per recipient (and client), whichever route or sign-in sends the mail.
        mail,
      },
      passwordChecks: budget('password-check', limits.passwordChecksPerMinute, MINUTE, ATTEMPT_KEYS),
      hashes: {
        perAccount: budget('hash:account', limits.hashesPerAccountPerMinute, MINUTE, ATTEMPT_KEYS),
        perIp: budget('hash:ip', limits.hashesPerIpPerMinute, MINUTE, ATTEMPT_KEYS),
      },
    } satisfies RateLimits)

    app.decorate('takeMailBudget', async (email: string, asker: Asker) => (await mail.take(email, asker)).allowed)
  },
  { name: 'rate-limit', dependencies: ['redis'] },
)
