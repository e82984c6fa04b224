// Who may start an Argon2 operation now. Every hash or verification a request asks for is done
// for someone: an account (or, where there is none, the address asked about) from a client
// address. Each operation takes one from a budget of that account and one from a budget of that
// address, right answers included: a right password costs the workers what a wrong one does, and
// refunding it let one signed-in account keep every worker busy with re-checks of its own password.
// An account also has at most one operation in flight in this process; the others that its budget
// lets through wait in line for it (a double submit, a sign-in racing a reset: each is answered in
// turn; past 32 waiting, 429). So however many requests an account sends, it holds at most one
// place in the hash queue (with several instances, one in each; the budgets are shared through
// Redis), and the budget refuses the rest at once. The queue takes turns by client address
// (hash-pool.ts).
import { clientKey, rateLimited } from '../../plugins/rate-limit.js'
import type { MaybePromise } from '../../shared/maybe-async.js'
import { type HashFor, OFFLINE } from './password.js'

/** A fixed-window budget per key: `spend` takes one or throws 429 RATE_LIMITED (plugins/rate-limit.ts). */
export interface KeyedBudget {
  spend(key: string): MaybePromise<void>
}

export interface Admitted {
  /** Whose turn the operation takes in the hash queue: the client's address (its /64 for IPv6). */
  queueKey: string
  /** Ends the account's operation in flight. */
  release(): void
}

/** Operations of one account that may wait for the one in flight; beyond, 429 at once. */
const MAX_WAITING = 32

export class HashAdmission {
  /** Accounts with an operation in flight, each with the operations waiting for it, in order. */
  private readonly lines = new Map<string, Array<() => void>>()

  constructor(private readonly budgets: { perAccount: KeyedBudget; perIp: KeyedBudget }) {}

  /**
   * Admits one operation for `who` once its budgets allow it and the account has none in flight
   * (waiting in line for that), or throws 429 RATE_LIMITED.
   */
  async admit(who: HashFor): Promise<Admitted> {
    // The budgets first: an operation past them is refused at once and never waits, so an account's
    // line is no longer than its budget lets it be.
    const ip = who.ip === null ? null : clientKey(who.ip)
    if (ip !== null) await this.budgets.perIp.spend(ip)
    await this.budgets.perAccount.spend(who.account)
    // No await between the look-up and the claim: two parallel operations cannot both find it free.
    const line = this.lines.get(who.account)
    if (!line) this.lines.set(who.account, [])
    else if (line.length >= MAX_WAITING) throw rateLimited(1)
    else await new Promise<void>((resolve) => line.push(resolve))
    const release = () => {
      const waiting = this.lines.get(who.account)!
      // The turn passes to the next in line, still claimed; else the account has nothing in flight.
      const next = waiting.shift()
      if (next) next()
      else this.lines.delete(who.account)
    }
    return { queueKey: ip ?? OFFLINE.account, release }
  }

  /** Accounts with an operation in flight now. */
  get accountsInFlight(): number {
    return this.lines.size
  }
}
