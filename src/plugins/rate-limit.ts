// The rate-limit budgets: a global per-IP budget, named budgets that routes declare in their policy
// (sign-in and sign-up per IP; per address, split by client so that no stranger can spend an
// owner's: password attempts, attempts at a mailed code, mail), a per-account count of password
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
const DAY = 24 * HOUR

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

/** Places taken from several budgets: the last take (or the refusal), and how to give them all back. */
interface Taken {
  take: Take
  giveBack(): Promise<void>
}

/**
 * Takes one from each budget in turn. The first that refuses ends it: the places taken before it
 * are given back (nothing was done), and its refusal is the answer.
 */
async function takeInTurn(steps: ReadonlyArray<readonly [Budget, string]>): Promise<Taken> {
  const taken: Array<readonly [Budget, string, Take]> = []
  const giveBack = async () => {
    for (const [budget, key, take] of taken.splice(0)) await budget.refund(key, take)
  }
  for (const [budget, key] of steps) {
    const take = await budget.take(key)
    if (!take.allowed) {
      await giveBack()
      return { take, giveBack }
    }
    taken.push([budget, key, take])
  }
  return { take: taken.at(-1)![2], giveBack }
}

/** Who asks, for a budget keyed by an address: the client, and whether its browser is the owner's. */
export interface Asker {
  ip: string
  /**
   * The id of the address's account when it knows the asking browser (security/devices.ts: it
   * signed in to the account before); else null.
   */
  knownBy: () => MaybePromise<string | null>
}

/** The key of one client's budget for one address. */
export const clientAndAddress = (ip: string, email: string) => `${clientKey(ip)} ${email.toLowerCase()}`

/**
 * Password attempts for an address (sign-in). The browsers the account knows have an allowance of
 * their own (per account, so the device cookie's rotation does not renew it): strangers' guesses
 * never refuse their right password. Every other client shares the address's pool (`perAddress`):
 * at most that many checks a minute from unknown clients, whatever the number of IPs. Each of them
 * takes from its own share first (`perClient`, half the pool rounded up), so one client alone
 * cannot spend the whole pool: an owner on a new device still gets a turn against a lone guesser,
 * and always has the emailed code or link.
 */
export class SignInBudget {
  constructor(
    private readonly knownBrowsers: Budget,
    private readonly perClient: Budget,
    private readonly perAddress: Budget,
    private readonly now: () => number,
  ) {}

  async spend(email: string, asker: Asker): Promise<void> {
    const address = email.toLowerCase()
    const account = await asker.knownBy()
    const take = account
      ? await this.knownBrowsers.take(account)
      : (
          await takeInTurn([
            [this.perClient, clientAndAddress(asker.ip, address)],
            [this.perAddress, address],
          ])
        ).take
    allowedOrRefused(take, this.now())
  }
}

/** What a mail to an address carries: a link (256 random bits) or a six-digit code (guessable). */
export type MailKind = 'link' | 'code'

/**
 * Mail to an address. Each client (IP, or IPv6 /64) has its own hourly allowance for it, and a
 * daily one for codes. Anyone may ask for a mail to any address, so a cap of the address alone
 * would let a few clients block its owner for the hour: links, which nobody can guess or spend
 * for another (each is its own row), are held to the client's allowance only. Codes are six
 * digits: each mailed code is three more guesses, so they have caps per address too, hourly and
 * daily, over every client the account does not remember. The owner on a new device keeps the
 * links whatever strangers asked for; the owner's own browser is not held to the caps either.
 */
export class MailBudget {
  constructor(
    private readonly budgets: {
      perClient: Budget
      codesPerClientPerDay: Budget
      codesPerAddress: Budget
      codesPerAddressPerDay: Budget
    },
    private readonly now: () => number,
  ) {}

  async take(email: string, asker: Asker, kind: MailKind): Promise<Take> {
    const b = this.budgets
    const address = email.toLowerCase()
    const client = clientAndAddress(asker.ip, address)
    const own: Array<readonly [Budget, string]> = [[b.perClient, client]]
    if (kind === 'code') own.push([b.codesPerClientPerDay, client])
    const fromClient = await takeInTurn(own)
    if (!fromClient.take.allowed || kind === 'link' || (await asker.knownBy()) !== null) return fromClient.take
    const toAddress = await takeInTurn([
      [b.codesPerAddress, address],
      [b.codesPerAddressPerDay, address],
    ])
    // Refused by a cap: the client's allowances are given back, nothing was sent.
    if (!toAddress.take.allowed) await fromClient.giveBack()
    return toAddress.take
  }

  async spend(email: string, asker: Asker, kind: MailKind): Promise<void> {
    allowedOrRefused(await this.take(email, asker, kind), this.now())
  }
}

export interface RateLimits {
  global: Budget
  perIp: Record<IpBudget, Budget>
  /**
   * Budgets keyed by the body's email, each split by client: password attempts, attempts at a
   * mailed code (per address and client only: a code dies after three wrong tries), and mail.
   */
  perEmail: { signIn: SignInBudget; code: Budget; mail: MailBudget }
  /** Attempts at "your current password", per account, right answers included. */
  passwordChecks: Budget
  /** Argon2 operations per account (or per address without one) and per client IP, right answers included. */
  hashes: { perAccount: Budget; perIp: Budget }
}

declare module 'fastify' {
  interface FastifyInstance {
    rateLimits: RateLimits
    /**
     * Takes one mail carrying a link to `email` asked for by the client `ip` (the mail routes'
     * per-email limit). False when it is spent: the caller then skips sending instead of failing the request.
     */
    takeMailBudget(email: string, ip: string): Promise<boolean>
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

/** The address a per-address budget is keyed by: the body's email, or its phone number (src/auth/phone/). */
export const emailOf = (request: FastifyRequest) => {
  const body = request.body as { email?: unknown; phoneNumber?: unknown } | undefined
  return String(body?.email ?? body?.phoneNumber ?? '').toLowerCase()
}

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
      {
        perClient: budget('mail', limits.mailPerHour, HOUR, ATTEMPT_KEYS),
        codesPerClientPerDay: budget('mail:code:client-day', limits.codesPerClientPerDay, DAY, ATTEMPT_KEYS),
        codesPerAddress: budget('mail:address', limits.mailPerAddressPerHour, HOUR, ATTEMPT_KEYS),
        codesPerAddressPerDay: budget('mail:code:address-day', limits.codesPerAddressPerDay, DAY, ATTEMPT_KEYS),
      },
      now,
    )
    const attempts = limits.signInEmailPerMinute
    const signIn = new SignInBudget(
      budget('sign-in:known-device', attempts, MINUTE, ATTEMPT_KEYS),
      budget('sign-in:email:client', Math.ceil(attempts / 2), MINUTE, ATTEMPT_KEYS),
      budget('sign-in:email', attempts, MINUTE, ATTEMPT_KEYS),
      now,
    )
    app.decorate('rateLimits', {
      global: budget('global', limits.globalPerMinute, MINUTE),
      perIp: {
        signIn: budget('sign-in:ip', limits.signInIpPerMinute, MINUTE, ATTEMPT_KEYS),
        signUp: budget('sign-up:ip', limits.signUpIpPerMinute, MINUTE),
        guest: budget('guest:ip', limits.guestIpPerMinute, MINUTE),
      },
      perEmail: {
        signIn,
        code: budget('code:client', attempts, MINUTE, ATTEMPT_KEYS),
        // One mail budget per recipient (and client), whichever route or sign-in sends the mail.
        mail,
      },
      passwordChecks: budget('password-check', limits.passwordChecksPerMinute, MINUTE, ATTEMPT_KEYS),
      hashes: {
        perAccount: budget('hash:account', limits.hashesPerAccountPerMinute, MINUTE, ATTEMPT_KEYS),
        perIp: budget('hash:ip', limits.hashesPerIpPerMinute, MINUTE, ATTEMPT_KEYS),
      },
    } satisfies RateLimits)

    app.decorate(
      'takeMailBudget',
      async (email: string, ip: string) => (await mail.take(email, { ip, knownBy: () => null }, 'link')).allowed,
    )
  },
  { name: 'rate-limit', dependencies: ['redis'] },
)
