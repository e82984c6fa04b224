// Revocation under a half-broken database link (issue 34, finding 7): instance B's change listener
// reaches PostgreSQL through a proxy that goes silent, its socket still open, as on a link that
// drops packets. Nothing tells B that it no longer hears; its heartbeat must, and B must stop
// trusting its cache within the heartbeat's bound, then use it again once it listens again.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { type DatabaseHandle, openDatabase } from '../../../db/index.js'
import { migrateToLatest } from '../../../db/migrate.js'
import { buildApp } from '../../../src/app.js'
import { loadConfig } from '../../../src/config.js'
import { call, signUp, TEST_ENV } from '../../helpers/app.js'
import { logLines } from '../../helpers/log-lines.js'
import { freshPostgresUrl, usingPostgres } from '../../helpers/db.js'
import { readPgTemplate } from '../../helpers/pg-template.js'
import { cached, hits, listening, signInAgain, whoami, within } from '../../helpers/session-cache.js'
import { retarget, TcpProxy } from '../../helpers/tcp-proxy.js'

if (!usingPostgres()) {
  t.plan(0, 'a half-broken database link needs a PostgreSQL server: set DATABASE_URL (PGlite runs in-process, with no link)')
} else {
  await blackholeTests()
}

async function blackholeTests() {
  t.setTimeout(120_000)
  // Shorter than the defaults, so that the bound is well below what the test tolerates, which is
  // below what the code before the heartbeat took (3 to 8 s); not so short that a busy test
  // machine's pauses make B deaf on a healthy link.
  const heartbeat = { everyMs: 250, deadAfterMs: 1_000 }
  const REFUSED_WITHIN_MS = 2_500

  const url = await freshPostgresUrl(readPgTemplate()?.name)
  const proxy = new TcpProxy(retarget(url, 0).host, retarget(url, 0).port)
  const proxyUrl = retarget(url, await proxy.start()).url
  t.teardown(() => proxy.close())

  const open = async (database: DatabaseHandle, log?: ReturnType<typeof logLines>): Promise<FastifyInstance> => {
    const env = log ? { ...TEST_ENV, LOG_LEVEL: 'info' } : TEST_ENV
    const app = await buildApp(loadConfig(env), { database, logStream: log?.stream })
    t.teardown(() => app.close())
    await app.ready()
    return app
  }
  const handle = async (options: { url: string; heartbeat?: typeof heartbeat }) => {
    const opened = await openDatabase({ ...options, pgliteDir: 'memory://', poolSize: 2 })
    t.teardown(() => opened.close())
    return opened
  }
  const viaA = await handle({ url })
  await migrateToLatest(viaA.db) // a copy of the run's migrated template, or empty outside a tap run
  const a = await open(viaA)
  // B queries PostgreSQL directly and listens through the proxy. (B's own writes would not fence
  // this listener, which belongs to another handle's pool: B only reads here.)
  const direct = await handle({ url })
  const throughProxy = await handle({ url: proxyUrl, heartbeat })
  const bLog = logLines()
  const b = await open({ ...direct, listen: throughProxy.listen }, bLog)
  /** B's log lines with this message, or all of them. */
  const logged = (message?: string) =>
    bLog.lines.map((line) => JSON.parse(line)).filter((line) => message === undefined || line.msg === message)
  await Promise.all([listening(a), listening(b)])

  const health = async (app: FastifyInstance) => (await app.inject({ method: 'GET', url: '/api/health' })).json().sessionCache
  const listeningGauge = async (app: FastifyInstance) => {
    const res = await app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' })
    return /^session_cache_listening (\d)/m.exec(res.body)?.[1]
  }

  const owner = await signUp(a)
  const stolen = await signInAgain(a, owner)
  const renamed = await signInAgain(a, await signUp(a))

  t.test('a session revoked on A while B hears nothing is refused by B within the bound', async (t) => {
    await cached(t, b, stolen)
    await cached(t, b, renamed)
    const lostBefore = logged('session cache listener: connection lost, the cache is bypassed').length
    proxy.blackhole()
    const sessions = (await call(a, 'GET', '/api/auth/list-sessions', { cookie: owner.cookie })).json()
    const target = sessions.find((s: { current: boolean }) => !s.current)
    t.equal(
      (await call(a, 'POST', '/api/auth/revoke-session', { cookie: owner.cookie, body: { id: target.id } })).statusCode,
      200,
    )
    t.equal((await whoami(a, stolen)).statusCode, 401, 'A refuses it at once')
    // A change B will not hear of either: after B listens again, it must not answer from before.
    await call(a, 'PATCH', '/api/v1/profile', { cookie: renamed.cookie, body: { name: 'Renamed while B was deaf' } })

    const ms = await within(REFUSED_WITHIN_MS, async () => (await whoami(b, stolen)).statusCode === 401)
    t.comment(
      `B refused the revoked session ${ms} ms after the revocation (heartbeat every ${heartbeat.everyMs} ms, dead after ${heartbeat.deadAfterMs} ms)`,
    )
    t.equal(await health(b), 'bypassed', 'health says the cache is bypassed')
    t.equal(await listeningGauge(b), '0', 'so does /metrics')
    // Logged at the beat after B went deaf (a busy machine may have made it deaf once before).
    const deafness = `no heartbeat heard back within ${heartbeat.deadAfterMs} ms`
    const lostSinceBlackhole = () =>
      logged('session cache listener: connection lost, the cache is bypassed')
        .slice(lostBefore)
        .filter((line) => line.level === 40 && line.err?.message === deafness)
    await within(heartbeat.everyMs * 5, async () => lostSinceBlackhole().length > 0).catch(() => undefined)
    t.ok(lostSinceBlackhole().length > 0, 'the log says the connection was lost for want of a heartbeat')

    const before = hits(b)
    const fresh = await signInAgain(a, owner)
    for (let i = 0; i < 3; i++) t.equal((await whoami(b, fresh)).statusCode, 200)
    t.equal(hits(b), before, 'while B does not hear, every session is read from the database')
  })

  t.test('the link heals: B listens again and its cache is in use, emptied of what it missed', async (t) => {
    proxy.heal()
    const ms = await within(15_000, async () => b.sessionCache.listening)
    t.comment(`B listened again ${ms} ms after the link healed`)
    t.equal(await health(b), 'listening')
    t.equal(await listeningGauge(b), '1')
    const listenerLines = logged(undefined).filter((line) => line.msg.startsWith('session cache listener:'))
    t.equal(listenerLines.at(-1)?.msg, 'session cache listener: listening, the cache is in use', 'the log says so')
    t.equal((await whoami(b, stolen)).statusCode, 401, 'the revoked session stays refused')
    t.equal((await whoami(b, renamed)).json().name, 'Renamed while B was deaf', 'what changed unheard is read anew')
    await cached(t, b, renamed)
  })
}
