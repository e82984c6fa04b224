// Periodic purge of expired sessions and verification tokens: nothing else removes them. Safe with
// several instances on one PostgreSQL: each batch locks its rows with `for update skip locked`, so
// concurrent runs neither wait for each other nor delete a row twice.
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { DB } from '../../db/index.js'
import { purgeGuests } from '../auth/guests/service.js'
import { deleteExpiredBatch } from './queries.js'

/** Batches per table and call: one run cannot loop forever (at most 200 × batchSize rows per table). */
const MAX_BATCHES = 200

interface PurgeCounts {
  sessions: number
  verifications: number
}

/**
 * Deletes the sessions and verification tokens expired at `now` (expires_at <= now, as the app
 * reads them), `batchSize` rows per statement so no statement holds many locks for long.
 */
export async function purgeExpired(db: DB, now: Date, batchSize = 500): Promise<PurgeCounts> {
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new RangeError('batchSize must be a positive integer')
  return {
    sessions: await purgeTable(db, 'session', now, batchSize),
    verifications: await purgeTable(db, 'verification', now, batchSize),
  }
}

async function purgeTable(db: DB, table: 'session' | 'verification', now: Date, batchSize: number): Promise<number> {
  let total = 0
  for (let batch = 0; batch < MAX_BATCHES; batch++) {
    const deleted = await deleteExpiredBatch(db, table, now, batchSize)
    total += deleted
    // Fewer than a batch: nothing is left, or what is left is locked by a concurrent run.
    if (deleted < batchSize) break
  }
  return total
}

/**
 * One run of the maintenance task: the expired rows and the unreachable guests go, and the tokens' signing keys are rotated
 * (the next one published ahead of the run after next, the retired ones deleted: src/auth/tokens/keys.ts).
 */
export async function maintain(
  app: FastifyInstance,
): Promise<PurgeCounts & { guests: number; keys: { created: boolean; retired: number } }> {
  const counts = await purgeExpired(app.db, app.clock.now())
  // The guests nobody can reach any more, with their data (src/auth/guests/).
  const guests = await purgeGuests(app, app.config.auth.guestTtlDays)
  const keys = await app.signingKeys.rotate(2 * app.config.purge.intervalSeconds * 1000)
  return { ...counts, guests, keys }
}

export default fp(
  async function purge(app: FastifyInstance) {
    const intervalMs = app.config.purge.intervalSeconds * 1000
    if (intervalMs <= 0) return

    let timer: NodeJS.Timeout | undefined
    let running: Promise<void> | undefined
    let stopped = false

    // A setTimeout chain, not setInterval: the next run is scheduled only once this one ended.
    const schedule = (delayMs: number) => {
      if (stopped) return
      timer = setTimeout(run, delayMs)
      timer.unref()
    }
    const run = () => {
      timer = undefined
      running = Promise.resolve()
        .then(() => maintain(app))
        .then(
          ({ keys, ...counts }) => {
            if (counts.sessions > 0 || counts.verifications > 0 || counts.guests > 0)
              app.log.info({ purged: counts }, 'expired sessions, verification tokens and unreachable guests purged')
            if (keys.created || keys.retired > 0) app.log.info({ keys }, 'token signing keys rotated')
          },
          (err: unknown) => {
            app.log.warn(
              { err: { message: err instanceof Error ? err.message : String(err) } },
              'maintenance (purge of expired rows, rotation of signing keys) failed',
            )
          },
        )
        .finally(() => {
          running = undefined
          schedule(intervalMs)
        })
    }

    // Instances started together spread out: the first run comes at a random point of the first interval.
    app.addHook('onReady', async () => {
      schedule(Math.floor(Math.random() * intervalMs))
    })
    // onClose hooks run last-registered first: this one runs before the app closes its database.
    app.addHook('onClose', async () => {
      stopped = true
      clearTimeout(timer)
      await running
    })
  },
  { name: 'purge' },
)
