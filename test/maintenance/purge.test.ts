// The purge of expired sessions and verification tokens: in batches, exactly the expired rows, each
// once when several instances purge at the same time, and on its own timer when the app runs.
import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import t, { type Test } from 'tap'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { newId } from '../../src/shared/ids.js'
import purge, { purgeExpired } from '../../src/maintenance/purge.js'
import { buildTestApp, signUp, TEST_ENV } from '../helpers/app.js'
import { testDatabase, usingPostgres } from '../helpers/db.js'

const MINUTE = 60_000
const app = await buildTestApp()
const user = await signUp(app)

/** Inserts one session and one verification token per expiry; returns their ids. */
async function insertRows(target: FastifyInstance, expiries: Date[]): Promise<{ sessions: string[]; verifications: string[] }> {
  const sessions = expiries.map(() => newId())
  const verifications = expiries.map(() => newId())
  if (expiries.length === 0) return { sessions, verifications }
  await target.db
    .insertInto('session')
    .values(
      expiries.map((expires_at, i) => ({
        id: sessions[i]!,
        token_hash: randomBytes(32).toString('hex'),
        user_id: user.id,
        expires_at,
      })),
    )
    .execute()
  await target.db
    .insertInto('verification')
    .values(
      expiries.map((expires_at, i) => ({
        id: verifications[i]!,
        purpose: 'verify-email',
        token_hash: randomBytes(32).toString('hex'),
        user_id: user.id,
        expires_at,
      })),
    )
    .execute()
  return { sessions, verifications }
}

async function remaining(ids: { sessions: string[]; verifications: string[] }) {
  const sessions = ids.sessions.length
    ? await app.db.selectFrom('session').select('id').where('id', 'in', ids.sessions).execute()
    : []
  const verifications = ids.verifications.length
    ? await app.db.selectFrom('verification').select('id').where('id', 'in', ids.verifications).execute()
    : []
  return { sessions: sessions.map((r) => r.id).sort(), verifications: verifications.map((r) => r.id).sort() }
}

async function countExpired(now: Date) {
  const s = await app.db
    .selectFrom('session')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('expires_at', '<=', now)
    .executeTakeFirstOrThrow()
  const v = await app.db
    .selectFrom('verification')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('expires_at', '<=', now)
    .executeTakeFirstOrThrow()
  return { sessions: Number(s.n), verifications: Number(v.n) }
}

t.test('deletes exactly the expired rows, over several batches, and counts them', async (t) => {
  const now = new Date()
  // 10 expired (the last one expires exactly now: expired, as the app reads it), 4 live.
  const expired = await insertRows(
    app,
    Array.from({ length: 10 }, (_, i) => new Date(now.getTime() - (9 - i) * MINUTE)),
  )
  const live = await insertRows(
    app,
    [1, 2, 60, 24 * 60].map((m) => new Date(now.getTime() + m * MINUTE)),
  )
  t.same(await countExpired(now), { sessions: 10, verifications: 10 }, 'nothing else is expired')

  const counts = await purgeExpired(app.db, now, 3)
  t.same(counts, { sessions: 10, verifications: 10 })
  t.same(await remaining(expired), { sessions: [], verifications: [] }, 'the expired rows are gone')
  t.same(
    await remaining(live),
    { sessions: [...live.sessions].sort(), verifications: [...live.verifications].sort() },
    'the live rows remain',
  )

  const signedUp = await app.db
    .selectFrom('session')
    .select('id')
    .where('user_id', '=', user.id)
    .where('id', 'not in', live.sessions)
    .execute()
  t.equal(signedUp.length, 1, "the sign-up's own session remains")
  t.same(await purgeExpired(app.db, now, 3), { sessions: 0, verifications: 0 }, 'a second run finds nothing')

  await app.db.deleteFrom('session').where('id', 'in', live.sessions).execute()
  await app.db.deleteFrom('verification').where('id', 'in', live.verifications).execute()
})

t.test('an exact multiple of the batch size and the default batch size', async (t) => {
  const now = new Date()
  await insertRows(
    app,
    Array.from({ length: 6 }, (_, i) => new Date(now.getTime() - (i + 1) * MINUTE)),
  )
  t.same(await purgeExpired(app.db, now, 3), { sessions: 6, verifications: 6 }, 'two full batches, then an empty one')
  await insertRows(
    app,
    Array.from({ length: 5 }, (_, i) => new Date(now.getTime() - (i + 1) * MINUTE)),
  )
  t.same(await purgeExpired(app.db, now), { sessions: 5, verifications: 5 })
  await t.rejects(purgeExpired(app.db, now, 0), RangeError, 'a batch size of 0 is refused')
})

t.test('two concurrent purges delete each expired row exactly once', async (t) => {
  const now = new Date()
  const total = 150
  const expired = await insertRows(
    app,
    Array.from({ length: total }, (_, i) => new Date(now.getTime() - (i + 1) * 1000)),
  )
  const live = await insertRows(app, [new Date(now.getTime() + MINUTE)])

  const [a, b] = await Promise.all([purgeExpired(app.db, now, 3), purgeExpired(app.db, now, 3)])
  t.equal(a.sessions + b.sessions, total, `sessions deleted once in all (${a.sessions} + ${b.sessions})`)
  t.equal(a.verifications + b.verifications, total, `verifications deleted once in all (${a.verifications} + ${b.verifications})`)
  t.same(await remaining(expired), { sessions: [], verifications: [] }, 'no expired row is left')
  t.same(await remaining(live), live, 'the live rows remain')
  t.same(await countExpired(now), { sessions: 0, verifications: 0 })

  await app.db.deleteFrom('session').where('id', 'in', live.sessions).execute()
  await app.db.deleteFrom('verification').where('id', 'in', live.verifications).execute()
})

t.test(
  'a purge skips the rows another transaction holds, without waiting for it',
  { skip: usingPostgres() ? false : 'needs PostgreSQL: PGlite has a single connection' },
  async (t) => {
    const now = new Date()
    const expired = await insertRows(
      app,
      Array.from({ length: 8 }, (_, i) => new Date(now.getTime() - (i + 1) * MINUTE)),
    )
    const held = expired.sessions.slice(0, 2)
    await app.db.transaction().execute(async (trx) => {
      await trx.selectFrom('session').select('id').where('id', 'in', held).forUpdate().execute()
      t.same(await purgeExpired(app.db, now, 3), { sessions: 6, verifications: 8 }, 'all but the held rows, while they are held')
    })
    t.same(await purgeExpired(app.db, now, 3), { sessions: 2, verifications: 0 }, 'the held rows go once released')
  },
)

t.test('PURGE_INTERVAL_SECONDS: default 3600, 0 accepted (disables), out of range refused', async (t) => {
  t.equal(loadConfig({}).purge.intervalSeconds, 3600)
  t.equal(loadConfig({ PURGE_INTERVAL_SECONDS: '0' }).purge.intervalSeconds, 0)
  t.equal(loadConfig({ PURGE_INTERVAL_SECONDS: '86400' }).purge.intervalSeconds, 86400)
  for (const bad of ['-1', '86401', '1.5', 'hourly']) {
    t.throws(() => loadConfig({ PURGE_INTERVAL_SECONDS: bad }), /PURGE_INTERVAL_SECONDS/, bad)
  }
})

/** The app with the purge plugin, registered here until src/app.ts registers it itself. */
async function appWithPurge(t: Test, env: Record<string, string>, now: () => Date): Promise<FastifyInstance> {
  const config = loadConfig({ ...TEST_ENV, ...env })
  const instance = await buildApp(config, { database: await testDatabase(), clock: { now } })
  t.teardown(() => instance.close())
  if (!instance.hasPlugin('purge')) await instance.register(purge)
  await instance.ready()
  return instance
}

async function waitUntil(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await check()) return true
    await new Promise((r) => setTimeout(r, 50))
  }
  return check()
}

t.test('the plugin purges by itself every PURGE_INTERVAL_SECONDS, with the app clock', async (t) => {
  // The app's clock runs a day ahead: a session that expires in an hour is expired for it.
  const running = await appWithPurge(t, { PURGE_INTERVAL_SECONDS: '1' }, () => new Date(Date.now() + 24 * 60 * MINUTE))
  const soon = await insertRows(running, [new Date(Date.now() + 60 * MINUTE)])
  const live = await insertRows(running, [new Date(Date.now() + 48 * 60 * MINUTE)])
  const gone = await waitUntil(
    async () => (await remaining(soon)).sessions.length === 0 && (await remaining(soon)).verifications.length === 0,
    5000,
  )
  t.ok(gone, 'the row expired by the app clock was purged within 5 s')
  t.same(await remaining(live), live, 'the live rows remain')

  // A second interval deletes what expired since.
  const later = await insertRows(running, [new Date(Date.now() - MINUTE)])
  t.ok(await waitUntil(async () => (await remaining(later)).sessions.length === 0, 5000), 'the next run purges again')
  await app.db.deleteFrom('session').where('id', 'in', live.sessions).execute()
  await app.db.deleteFrom('verification').where('id', 'in', live.verifications).execute()
})

t.test('closing the app waits for a run in progress, and no run comes after it', async (t) => {
  let calls = 0
  const running = await appWithPurge(t, { PURGE_INTERVAL_SECONDS: '1' }, () => {
    calls++
    return new Date()
  })
  let closed = false
  let closing: Promise<void> | undefined
  // A lock on the table holds the next run in its first statement (PGlite: the transaction holds
  // its only connection); close() must wait for that run instead of pulling the database away.
  await app.db.transaction().execute(async (trx) => {
    await sql`lock table "session" in access exclusive mode`.execute(trx)
    const before = calls
    t.ok(await waitUntil(async () => calls > before, 5000), 'a run began and waits for the lock')
    closing = running.close().then(() => {
      closed = true
    })
    await new Promise((r) => setTimeout(r, 300))
    t.equal(closed, false, 'close() waits for the run in progress')
  })
  await closing
  t.equal(closed, true, 'close() resolves once the run ended')
  const after = calls
  await new Promise((r) => setTimeout(r, 1500))
  t.equal(calls, after, 'no run after close')
})

t.test('PURGE_INTERVAL_SECONDS=0 disables the purge', async (t) => {
  let calls = 0
  await appWithPurge(t, { PURGE_INTERVAL_SECONDS: '0' }, () => {
    calls++
    return new Date()
  })
  const expired = await insertRows(app, [new Date(Date.now() - MINUTE)])
  await new Promise((r) => setTimeout(r, 1500))
  t.equal(calls, 0, 'the purge never read the clock')
  t.same(await remaining(expired), expired, 'the expired rows are still there')
  await purgeExpired(app.db, new Date())
})

t.test('a failing run is logged at warn and the purge keeps going', async (t) => {
  const lines: Array<Record<string, unknown>> = []
  const stream = { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) }
  // Only the purge reads the clock once the app is ready: its next run fails, the one after works.
  let fail = false
  const config = loadConfig({ ...TEST_ENV, LOG_LEVEL: 'info', PURGE_INTERVAL_SECONDS: '1' })
  const instance = await buildApp(config, {
    database: await testDatabase(),
    logStream: stream,
    clock: {
      now: () => {
        if (fail) {
          fail = false
          throw new Error('clock broke')
        }
        return new Date()
      },
    },
  })
  t.teardown(() => instance.close())
  if (!instance.hasPlugin('purge')) await instance.register(purge)
  await instance.ready()
  fail = true

  const failed = (l: Record<string, unknown>) => l.level === 40 && /purge/.test(String(l.msg))
  t.ok(await waitUntil(async () => lines.some(failed), 5000), 'a warning was logged')
  t.match(lines.find(failed), { err: { message: 'clock broke' } })
  const purged = (l: Record<string, unknown>) => l.level === 30 && typeof l.msg === 'string' && /purged/.test(l.msg)
  t.notOk(lines.some(purged), 'a run that deleted nothing logged nothing at info')
  const expired = await insertRows(app, [new Date(Date.now() - MINUTE)])
  t.ok(await waitUntil(async () => lines.some(purged), 5000), 'a later run purged and logged at info')
  t.match(lines.find(purged), { purged: { sessions: 1, verifications: 1 } }, 'with the counts')
  t.same(await remaining(expired), { sessions: [], verifications: [] })
})
