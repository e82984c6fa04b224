// Password hashing on worker threads that run at a lower CPU priority than the event loop.
//
// Argon2id takes milliseconds of one core per hash (OWASP parameters). On libuv's thread pool it
// competed with the event loop and the database as an equal, so a sign-in storm slowed every other
// request; and with only one hash per core in flight a core sat idle between one hash and the next
// (docs/benchmarks.md has the measurements). Here each worker is given its next hash before the
// current one ends, and on Linux each worker thread lowers its own priority (nice), so hashing
// fills the CPU the requests leave idle and yields it to them at once. Beyond the workers'
// capacity, at most `maxQueue` hashes wait; past that the caller gets 503 with Retry-After rather
// than an unbounded queue.
//
// The waiting hashes take turns by key (the client's address, admission.ts): one from each key in
// turn, so a key with a hundred waiting does not make a newcomer wait behind all of them. When the
// queue is full, the key with the longest queue gives up its newest task (503) to a key with fewer
// waiting; so a flood from one address fills the queue only with its own work and is shed first,
// and everyone else's sign-in still gets in.
import { createRequire } from 'node:module'
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import { serviceUnavailable } from '../../shared/errors.js'

export interface Argon2Options {
  memoryCost: number
  timeCost: number
  parallelism: number
}

export interface ScryptParams {
  N: number
  r: number
  p: number
  maxmem: number
}

type Task =
  | { op: 'argon2Hash'; password: string; options: Argon2Options }
  | { op: 'argon2Verify'; hash: string; password: string }
  | { op: 'scrypt'; password: string; salt: string; keylen: number; params: ScryptParams }
  | { op: 'bcryptCompare'; password: string; hash: string }

interface Job {
  id: number
  /** Whose turn it takes in the queue. */
  key: string
  task: Task
  resolve(value: unknown): void
  reject(err: Error): void
}

interface Slot {
  worker: Worker
  jobs: Map<number, Job>
}

/** Tasks handed to one worker at once: when one ends, the next is already in its inbox. */
const DEPTH = 2
/** The workers' niceness on Linux (0 = the event loop's priority, 19 = the lowest). */
export const HASH_THREAD_NICE = 10

const require = createRequire(import.meta.url)

// Plain JavaScript run by each worker. Started from source with no execArgv, so a worker loads
// nothing but the two hashing libraries (no TypeScript loader in tests, same code in dist/).
// setPriority(0, n) on Linux changes the calling thread only; elsewhere it would lower the whole
// process, so it is skipped there.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const { scryptSync } = require('node:crypto')
const { setPriority } = require('node:os')
const argon2 = require(workerData.argon2)
const bcrypt = require(workerData.bcrypt)
if (workerData.nice > 0) setPriority(0, workerData.nice)
function run(task) {
  switch (task.op) {
    case 'argon2Hash': return argon2.hashSync(task.password, task.options)
    case 'argon2Verify': return argon2.verifySync(task.hash, task.password)
    case 'scrypt': return scryptSync(task.password, task.salt, task.keylen, task.params)
    case 'bcryptCompare': return bcrypt.compareSync(task.password, task.hash)
    default: throw new Error('unknown task ' + task.op)
  }
}
parentPort.on('message', (task) => {
  let reply
  try {
    reply = { id: task.id, result: run(task) }
  } catch (err) {
    reply = { id: task.id, error: String((err && err.message) || err) }
  }
  parentPort.postMessage(reply)
})
`

export class HashPool {
  private readonly slots: Slot[] = []
  /** Waiting tasks per key; the Map's order is the order of turns (a key served goes to the back). */
  private readonly waiting = new Map<string, Job[]>()
  private waitingCount = 0
  private nextId = 1
  private closed = false

  constructor(
    /** Worker threads, each hashing one password at a time. */
    readonly concurrency = Math.max(1, availableParallelism()),
    /** Tasks allowed to wait beyond what the workers hold. */
    readonly maxQueue = 64,
    readonly nice = process.platform === 'linux' ? HASH_THREAD_NICE : 0,
  ) {}

  /** Tasks the workers hold at once: what a caller feeding the pool should keep in flight. */
  get capacity(): number {
    return this.concurrency * DEPTH
  }

  /** Tasks handed to workers or waiting for one. */
  get inFlight(): number {
    return this.slots.reduce((n, s) => n + s.jobs.size, 0) + this.waitingCount
  }

  /** `key`: whose turn the task takes in the queue (all of one key wait in their order). */
  argon2Hash(password: string, options: Argon2Options, key = LOCAL): Promise<string> {
    return this.run({ op: 'argon2Hash', password, options }, key)
  }

  argon2Verify(hash: string, password: string, key = LOCAL): Promise<boolean> {
    return this.run({ op: 'argon2Verify', hash, password }, key)
  }

  scrypt(password: string, salt: string, keylen: number, params: ScryptParams, key = LOCAL): Promise<Uint8Array> {
    return this.run({ op: 'scrypt', password, salt, keylen, params }, key)
  }

  bcryptCompare(password: string, hash: string, key = LOCAL): Promise<boolean> {
    return this.run({ op: 'bcryptCompare', password, hash }, key)
  }

  /** Ends the workers; waiting and running tasks fail with 503. */
  async close(): Promise<void> {
    this.closed = true
    for (let job = this.nextWaiting(); job; job = this.nextWaiting()) job.reject(shuttingDown())
    await Promise.all(this.slots.map((s) => s.worker.terminate()))
  }

  private run<T>(task: Task, key: string): Promise<T> {
    if (this.closed) return Promise.reject(shuttingDown())
    const slot = this.slotWithRoom()
    if (!slot && !this.makeRoomFor(key)) return Promise.reject(queueFull())
    return new Promise<T>((resolve, reject) => {
      const job: Job = { id: this.nextId++, key, task, resolve: resolve as (value: unknown) => void, reject }
      if (slot) this.dispatch(slot, job)
      else this.enqueue(job)
    })
  }

  /**
   * Whether a task of `key` may wait. In a full queue, the longest queue gives up its newest task
   * when it holds at least two more than `key` does: the newcomer's key gets its share, and a
   * key that already has the most waiting is refused rather than made to churn with its equals.
   */
  private makeRoomFor(key: string): boolean {
    if (this.waitingCount < this.maxQueue) return true
    const own = this.waiting.get(key)?.length ?? 0
    let longest: Job[] | undefined
    for (const queue of this.waiting.values()) if (!longest || queue.length > longest.length) longest = queue
    if (!longest || longest.length < own + 2) return false
    const shed = longest.pop()!
    this.waitingCount--
    shed.reject(queueFull())
    return true
  }

  private enqueue(job: Job): void {
    const queue = this.waiting.get(job.key)
    if (queue) queue.push(job)
    else this.waiting.set(job.key, [job])
    this.waitingCount++
  }

  /** The next waiting task: the first of the key whose turn it is, which then goes to the back. */
  private nextWaiting(): Job | undefined {
    const turn = this.waiting.entries().next()
    if (turn.done) return undefined
    const [key, queue] = turn.value
    const job = queue.shift()!
    this.waiting.delete(key)
    if (queue.length > 0) this.waiting.set(key, queue)
    this.waitingCount--
    return job
  }

  /** The least busy worker that can take a task, starting another while fewer than `concurrency` run. */
  private slotWithRoom(): Slot | undefined {
    let best: Slot | undefined
    for (const slot of this.slots) {
      if (slot.jobs.size < DEPTH && (!best || slot.jobs.size < best.jobs.size)) best = slot
    }
    if ((!best || best.jobs.size > 0) && this.slots.length < this.concurrency) return this.start()
    return best
  }

  private dispatch(slot: Slot, job: Job): void {
    slot.jobs.set(job.id, job)
    slot.worker.ref() // a pending hash keeps the process alive (the import CLI awaits them)
    slot.worker.postMessage({ id: job.id, ...job.task })
  }

  private start(): Slot {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      execArgv: [],
      workerData: { argon2: require.resolve('@node-rs/argon2'), bcrypt: require.resolve('bcryptjs'), nice: this.nice },
    })
    const slot: Slot = { worker, jobs: new Map() }
    this.slots.push(slot)
    worker.on('message', (reply: { id: number; result?: unknown; error?: string }) => {
      const job = slot.jobs.get(reply.id)
      slot.jobs.delete(reply.id)
      if (reply.error !== undefined) job?.reject(new Error(reply.error))
      else job?.resolve(reply.result)
      const next = this.nextWaiting()
      if (next) this.dispatch(slot, next)
      else if (slot.jobs.size === 0) worker.unref() // an idle pool never holds the process open
    })
    // A worker that dies fails its own tasks with the cause; the next task starts a fresh worker.
    let failure: Error | undefined
    worker.on('error', (err) => {
      failure = err
    })
    worker.on('exit', () => {
      this.slots.splice(this.slots.indexOf(slot), 1)
      const lost = [...slot.jobs.values()]
      slot.jobs.clear()
      for (const job of lost) job.reject(this.closed ? shuttingDown() : (failure ?? new Error('password hashing worker exited')))
      const next = this.closed ? undefined : this.nextWaiting()
      if (next) this.dispatch(this.slotWithRoom()!, next)
    })
    return slot
  }
}

/** The queue key of work that is nobody's turn but its own (the import, the pool's own tests). */
const LOCAL = 'local'

const shuttingDown = () => serviceUnavailable('The service is shutting down', 5)
const queueFull = () => serviceUnavailable('Too many password operations in progress, try again shortly', 2)
