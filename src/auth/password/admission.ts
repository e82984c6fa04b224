// Who may start an Argon2 operation now. Every hash or verification a request asks for is done
// for someone: an account (or, where there is none, the address asked about) from a client
// address. Each operation takes one from a budget of that account and one from a budget of that
// address, right answers included: a right password costs the workers what a wrong one does, and
// refunding it let one signed-in account keep every worker busy with re-checks of its own password.
// An account also has at most one operation in flight in this process. One more may wait for it
// (a double submit, a reset racing a change of password: both are answered), any further one at
// the same time is refused with 429 at once; so however many requests an account sends, it holds
// at most one place in the hash queue (with several instances, one in each; the budgets are shared
// through Redis). The queue then takes turns by client address (hash-pool.ts).
import { clientKey, rateLimited } from '../../plugins/rate-limit.js'
import { type HashFor, OFFLINE } from './password.js'

/** A fixed-window budget per key: `take` returns 0 when allowed, else the seconds to wait (plugins/rate-limit.ts). */
export interface KeyedBudget {
  take(key: string): Promise<number>
}

export interface Admitted {
  /** Whose turn the operation takes in the hash queue: the client's address (its /64 for IPv6). */
  queueKey: string
  /** Ends the account's operation in flight. */
  release(): void
}

/** An account with an operation in flight, and the one operation that may wait for it. */
interface InFlight {
  waiter: (() => void) | null
}

export class HashAdmission {
  private readonly accounts = new Map<string, InFlight>()

  constructor(private readonly budgets: { perAccount: KeyedBudget; perIp: KeyedBudget }) {}

  /**
   * Admits one operation for `who` once the account has none in flight (waiting for it when none
   * else waits), or throws 429 RATE_LIMITED: two already in flight or waiting, or a budget spent.
   */
  async admit(who: HashFor): Promise<Admitted> {
    // Claimed before the first await, so a burst of parallel requests cannot all pass the check.
    const current = this.accounts.get(who.account)
    if (!current) this.accounts.set(who.account, { waiter: null })
    else if (current.waiter) throw rateLimited(1)
    else await new Promise<void>((resolve) => (current.waiter = resolve))
    const release = () => {
      const state = this.accounts.get(who.account)!
      // The turn passes to the one waiting, still claimed; else the account has nothing in flight.
      if (state.waiter) {
        const next = state.waiter
        state.waiter = null
        next()
      } else {
        this.accounts.delete(who.account)
      }
    }
    const ip = who.ip === null ? null : clientKey(who.ip)
    try {
      let retryAfter = ip === null ? 0 : await this.budgets.perIp.take(ip)
      if (retryAfter === 0) retryAfter = await this.budgets.perAccount.take(who.account)
      if (retryAfter > 0) throw rateLimited(retryAfter)
    } catch (err) {
      release()
      throw err
    }
    return { queueKey: ip ?? OFFLINE.account, release }
  }

  /** Accounts with an operation in flight now. */
  get accountsInFlight(): number {
    return this.accounts.size
  }
}
