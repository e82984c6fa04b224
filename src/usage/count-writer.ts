// Counts asked for on their own (POST /api/v1/usage/{metric}/increment) are written together. While
// one statement is at the database, the counts that arrive wait, and the next statement writes all of
// them: one round trip and one commit for many counts. Idle, a count goes out at once; under load one
// statement carries many, which is what lets a burst of increments cost about what a burst of reads
// does (docs/benchmarks.md). The limits are still held by PostgreSQL: each counter's guard is in the
// statement, so other instances and transactions that count the same row are serialised by its lock
// as before.
//
// A counter asked for several times in one batch is written once, with the sum (a statement updates a
// row only once). If the sum fits the limit, every part fits (amounts are positive), and each part is
// answered with the count it brought the counter to, in the order they came: what one statement each
// would have answered. If the sum does not fit, the parts go one statement each, in order, so those
// that still fit are counted and the rest refused; so do parts of one counter judged under different
// limits (the user's plan changed or lapsed between them).
import type { DB } from '../../db/index.js'
import { addToCounter, addToCounters, type CounterAdd, type CounterAttempt, type CounterKey } from './queries.js'

interface Pending extends CounterAdd {
  resolve(attempt: CounterAttempt): void
  reject(err: unknown): void
}

/** Same counter and same limit: the parts that can be summed into one row of the statement. */
const counterOf = ({ key, limit }: CounterAdd) =>
  `${key.userId}\u0000${key.metric}\u0000${key.periodStart.getTime()}\u0000${limit}`

export class CountWriter {
  private waiting: Pending[] = []
  // One statement at a time: two of this process would share counters and queue on each other's
  // row locks (docs/benchmarks.md has the measurement), while one carries every count that waits.
  private writing = false

  constructor(private readonly db: DB) {}

  /** Adds `amount` to the counter unless that passes `limit` (null = no limit); addToCounter's answer. */
  add(key: CounterKey, amount: number, limit: number | null): Promise<CounterAttempt> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ key, amount, limit, resolve, reject })
      if (!this.writing) this.writeWaiting()
    })
  }

  private writeWaiting(): void {
    const batch = this.waiting
    this.waiting = []
    this.writing = true
    void this.write(batch).finally(() => {
      this.writing = false
      if (this.waiting.length > 0) this.writeWaiting()
    })
  }

  /** Settles every count of the batch; never throws (a count that fails is answered with its error). */
  private async write(batch: Pending[]): Promise<void> {
    const groups = new Map<string, Pending[]>()
    for (const part of batch) {
      const counter = counterOf(part)
      const group = groups.get(counter)
      if (group) group.push(part)
      else groups.set(counter, [part])
    }
    // Parts of one counter judged under different limits (the plan changed or lapsed between them)
    // cannot share a guard: they go one by one, after the batch.
    const oneByOne: Pending[] = []
    const rows: Pending[][] = []
    for (const parts of groups.values()) {
      if (parts.every((p) => p.limit === parts[0]!.limit)) rows.push(parts)
      else oneByOne.push(...parts)
    }
    const sums = rows.map((parts) => ({ ...parts[0]!, amount: parts.reduce((sum, p) => sum + p.amount, 0) }))
    let attempts: CounterAttempt[]
    try {
      attempts = sums.length > 0 ? await addToCounters(this.db, sums) : []
    } catch (err) {
      // One count the database refuses (its user was deleted meanwhile, a count past the integer
      // range) must fail alone, not with everyone else's in its batch; so must a batch that met
      // another's locks badly. Any other failure (the database is down) is every count's answer.
      if (refusedAsAWhole(err)) await this.oneByOne(batch)
      else for (const part of batch) part.reject(err)
      return
    }
    rows.forEach((parts, i) => {
      const { used, seen } = attempts[i]!
      if (used === undefined) {
        if (parts.length === 1) parts[0]!.resolve({ used, seen })
        else oneByOne.push(...parts)
        return
      }
      let count = used - sums[i]!.amount
      for (const part of parts) {
        const before = count
        count += part.amount
        part.resolve({ used: count, seen: before })
      }
    })
    await this.oneByOne(oneByOne)
  }

  /** One statement per count, in order. */
  private async oneByOne(parts: Pending[]): Promise<void> {
    for (const part of parts) {
      try {
        part.resolve(await addToCounter(this.db, part.key, part.amount, part.limit))
      } catch (err) {
        part.reject(err)
      }
    }
  }
}

/**
 * SQLSTATE class 21 (cardinality: a row the statement would update twice), 22 (data exception), 23
 * (integrity constraint violation) or 40 (a deadlock or serialization failure): something about the
 * rows of this batch, not the database being down.
 */
function refusedAsAWhole(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^(21|22|23|40)/.test(code)
}
