// Sessions from memory (src/auth/session/cache.ts), with revocation still immediate: what one
// process changes it sees at once, what anyone else changes (another instance, the command line,
// plain SQL) every instance hears from PostgreSQL's NOTIFY, and a listener that is not listening
// means no cache at all.
import pg from 'pg'
import t from 'tap'
import { openDatabase } from '../../../db/index.js'
import { migrateToLatest } from '../../../db/migrate.js'
import { HEARTBEAT, writesWatchedTable } from '../../../db/notifications.js'
import { buildApp } from '../../../src/app.js'
import { loadConfig } from '../../../src/config.js'
import { buildTestApp, call, signUp, signUpWithRole, TEST_ENV, type TestUser } from '../../helpers/app.js'
import { runCli } from '../../helpers/cli.js'
import { freshPostgresUrl, usingPostgres } from '../../helpers/db.js'
import { cached, hits, listening, signInAgain, whoami, within } from '../../helpers/session-cache.js'

// What the design promises (db/notifications.ts): while listening, no change older than the
// heartbeat's deadAfterMs goes unheard. Asked for no sooner than that, with room for a loaded
// machine's pauses: the latencies seen (milliseconds, as a rule) are printed at the end.
const HEARD_WITHIN_MS = HEARTBEAT.deadAfterMs + 2_000

t.setTimeout(240_000)
const DAY = 24 * 60 * 60 * 1000

t.test('which statements make this process fence: the ones that fire the change triggers', async (t) => {
  // One statement a line, as a query builder or a migration would send it.
  const statements = (lines: string) => lines.trim().split(/\s*\n\s*/)
  const firing = statements(`
    update "user" set "plan" = $1 where "id" = $2
    delete from "session" where "token_hash" = $1
    DELETE FROM session WHERE user_id = $1
    truncate table "user" cascade
    insert into "user" ("id") values ($1) on conflict ("id") do update set "name" = excluded."name"
  `)
  const quiet = statements(`
    select * from "session" s join "user" u on u.id = s.user_id
    insert into "session" ("id", "token_hash") values ($1, $2)
    update "usage_counter" set used = used + 1 where user_id = $1
    delete from "user_note" where id = $1
    insert into usage_counter as c (user_id) values ($1) on conflict do update set used = 1
  `)
  for (const text of firing) t.ok(writesWatchedTable(text), text)
  for (const text of quiet) t.notOk(writesWatchedTable(text), text)
})

t.test('one instance', async (t) => {
  let offset = 0
  const app = await buildTestApp({ deps: { clock: { now: () => new Date(Date.now() + offset) } } })
  await listening(app)

  t.test('a session is read once, then served from memory', async (t) => {
    const user = await signUp(app)
    const misses = app.sessionCache.stats.misses
    t.equal((await whoami(app, user)).statusCode, 200)
    t.equal(app.sessionCache.stats.misses, misses + 1, 'the first request reads the database')
    await cached(t, app, user)
    const health = await app.inject({ method: 'GET', url: '/api/health' })
    t.equal(health.json().sessionCache, 'listening')
    const metrics = await app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' })
    t.match(metrics.body, /session_cache_hits_total [1-9]/)
    t.match(metrics.body, /session_cache_listening 1/)
  })

  t.test("this instance's own writes apply at its very next request", async (t) => {
    const user = await signUp(app)
    await cached(t, app, user)
    const updated = await call(app, 'PATCH', '/api/v1/profile', { cookie: user.cookie, body: { name: 'Renamed' } })
    t.equal(updated.statusCode, 200)
    t.equal((await whoami(app, user)).json().name, 'Renamed')

    // Plain SQL through the app's own database handle: the trigger tells the cache.
    await app.db.updateTable('user').set({ plan: 'premium', plan_expires_at: null }).where('id', '=', user.id).execute()
    t.equal((await whoami(app, user)).json().plan, 'premium')
    await app.db.deleteFrom('session').where('user_id', '=', user.id).execute()
    t.equal((await whoami(app, user)).statusCode, 401, 'a session deleted in SQL is refused at the next request')

    const other = await signUp(app)
    await cached(t, app, other)
    t.equal((await call(app, 'POST', '/api/auth/sign-out', { cookie: other.cookie, body: {} })).statusCode, 200)
    t.equal((await whoami(app, other)).statusCode, 401, 'signed out')
  })

  t.test('expiry is decided from memory, without a write or a notification', async (t) => {
    offset = 0
    const user = await signUp(app)
    await cached(t, app, user)
    offset = 31 * DAY
    const before = { hits: hits(app), misses: app.sessionCache.stats.misses }
    t.equal((await whoami(app, user)).statusCode, 401)
    t.equal(hits(app), before.hits + 1, 'the expired session was found in memory and refused there')
    t.equal(app.sessionCache.stats.misses, before.misses)
    offset = 0
  })

  t.test('renewal writes once per half-lifetime, so reads keep hitting the cache', async (t) => {
    offset = 0
    const user = await signUp(app)
    const session = await signInAgain(app, user, { rememberMe: false })
    await cached(t, app, session)
    const before = hits(app)
    for (let i = 0; i < 5; i++) t.equal((await whoami(app, session)).statusCode, 200)
    t.equal(hits(app), before + 5, 'a one-day browser session is not rewritten on every request')
    offset = 0.6 * DAY // past half of its day: renewed once, then cached again
    t.equal((await whoami(app, session)).statusCode, 200)
    const renewed = (await whoami(app, session)).json().sessionExpiresAt
    t.ok(new Date(renewed).getTime() > Date.now() + 1.5 * DAY, 'renewed a day past the clock')
    // Served from memory again once this process heard its own renewal (at once on PGlite).
    await within(HEARD_WITHIN_MS, async () => {
      const before = hits(app)
      await whoami(app, session)
      return hits(app) === before + 1
    })
    offset = 0
  })

  t.test('the cache holds at most SESSION_CACHE_SIZE sessions; the oldest unused one goes first', async (t) => {
    const small = await buildTestApp({ env: { SESSION_CACHE_SIZE: '2' } })
    await listening(small)
    const [a, b, c] = [await signUp(small), await signUp(small), await signUp(small)]
    await whoami(small, a) // cached
    await whoami(small, b) // cached
    await whoami(small, a) // a hit: a is in use
    await whoami(small, c) // cached; one must go, and it is b, not the older but used a
    t.equal(small.sessionCache.size, 2)
    t.equal(small.sessionCache.stats.evictions, 1)
    const before = { hits: hits(small), misses: small.sessionCache.stats.misses }
    t.equal((await whoami(small, a)).statusCode, 200)
    t.equal(hits(small), before.hits + 1, 'the session in use stayed')
    t.equal((await whoami(small, b)).statusCode, 200, 'an evicted session is read again')
    t.equal(small.sessionCache.stats.misses, before.misses + 1)
  })

  t.test('SESSION_CACHE_SIZE=0 turns it off: every request reads the database', async (t) => {
    const off = await buildTestApp({ env: { SESSION_CACHE_SIZE: '0' } })
    const user = await signUp(off)
    for (let i = 0; i < 3; i++) t.equal((await whoami(off, user)).statusCode, 200)
    t.equal(hits(off), 0)
    t.equal((await off.inject({ method: 'GET', url: '/api/health' })).json().sessionCache, 'disabled')
  })
})

t.test(
  'two instances on one PostgreSQL',
  { skip: usingPostgres() ? false : 'DATABASE_URL is not set: two instances need a shared PostgreSQL server' },
  async (t) => {
    const url = await freshPostgresUrl()
    const open = async () => {
      const handle = await openDatabase({ url, pgliteDir: 'memory://', poolSize: 4 })
      const app = await buildApp(loadConfig(TEST_ENV), { database: handle })
      t.teardown(async () => {
        await app.close()
        await handle.close()
      })
      await app.ready()
      return app
    }
    const setup = await openDatabase({ url, pgliteDir: 'memory://', poolSize: 1 })
    await migrateToLatest(setup.db)
    await setup.close()
    const a = await open()
    const b = await open()
    const sqlClient = new pg.Client({ connectionString: url })
    await sqlClient.connect()
    t.teardown(() => sqlClient.end())
    await Promise.all([listening(a), listening(b)])
    const admin = await signUpWithRole(a, 'admin')

    // Each change is made elsewhere, then B is asked until it answers with the change.
    const latencies: Record<string, number> = {}
    const seenByB = async (name: string, user: TestUser, check: (res: Awaited<ReturnType<typeof whoami>>) => boolean) => {
      latencies[name] = await within(HEARD_WITHIN_MS, async () => check(await whoami(b, user)))
    }
    const refused = (res: { statusCode: number }) => res.statusCode === 401

    t.test('a sign-out on A', async (t) => {
      const user = await signUp(a)
      await cached(t, b, user)
      t.equal((await call(a, 'POST', '/api/auth/sign-out', { cookie: user.cookie, body: {} })).statusCode, 200)
      await seenByB('sign-out on A', user, refused)
    })

    t.test('a revoked session on A', async (t) => {
      const user = await signUp(a)
      const other = await signInAgain(a, user)
      await cached(t, b, other)
      const sessions = (await call(a, 'GET', '/api/auth/list-sessions', { cookie: user.cookie })).json()
      const target = sessions.find((s: { current: boolean }) => !s.current)
      const res = await call(a, 'POST', '/api/auth/revoke-session', { cookie: user.cookie, body: { id: target.id } })
      t.equal(res.statusCode, 200)
      await seenByB('revoke-session on A', other, refused)
    })

    t.test('a password change on A ends the other sessions', async (t) => {
      const user = await signUp(a)
      const other = await signInAgain(a, user)
      await cached(t, b, other)
      const res = await call(a, 'POST', '/api/auth/change-password', {
        cookie: user.cookie,
        body: { currentPassword: user.password, newPassword: 'another good passphrase 42', revokeOtherSessions: true },
      })
      t.equal(res.statusCode, 200)
      await seenByB('change-password on A', other, refused)
    })

    t.test("an admin's role and plan changes on A", async (t) => {
      const user = await signUp(a)
      const changes: Array<[string, string, object, Parameters<typeof seenByB>[2]]> = [
        ['role granted on A', 'role', { role: 'admin' }, (res) => res.json().role === 'admin'],
        ['plan set on A', 'plan', { plan: 'premium' }, (res) => res.json().plan === 'premium'],
        ['demotion on A', 'role', { role: 'member' }, refused],
      ]
      for (const [change, path, body, seen] of changes) {
        await cached(t, b, user)
        const res = await call(a, 'POST', `/api/v1/admin/users/${user.id}/${path}`, { cookie: admin.cookie, body })
        t.equal(res.statusCode, 200, change)
        await seenByB(change, user, seen)
      }
    })

    t.test('a ban on A', async (t) => {
      const user = await signUp(a)
      await cached(t, b, user)
      const res = await call(a, 'POST', `/api/v1/admin/users/${user.id}/ban`, { cookie: admin.cookie, body: { reason: 'Abuse' } })
      t.equal(res.statusCode, 200)
      await seenByB('ban on A', user, refused)
    })

    t.test('a ban set in SQL, which ends no session by itself', async (t) => {
      const user = await signUp(a)
      await cached(t, b, user)
      await sqlClient.query(`update "user" set banned = true, ban_reason = 'by hand' where id = $1`, [user.id])
      await seenByB('ban set in SQL', user, refused)
    })

    t.test('the command line', async (t) => {
      const user = await signUp(a)
      await cached(t, b, user)
      const res = await runCli(['set-role', user.email, 'admin'], { DATABASE_URL: url })
      t.equal(res.code, 0, res.stderr)
      await seenByB('set-role from the command line', user, (r) => r.json().role === 'admin')
    })

    t.test('plain SQL by an operator', async (t) => {
      const user = await signUp(a)
      await cached(t, b, user)
      await sqlClient.query(`update "user" set name = 'Changed in SQL' where id = $1`, [user.id])
      await seenByB('user updated in SQL', user, (res) => res.json().name === 'Changed in SQL')
      await cached(t, b, user)
      await sqlClient.query('delete from "session" where user_id = $1', [user.id])
      await seenByB('session deleted in SQL', user, refused)
    })

    t.test("B's listening connection killed: no cache until it listens again", async (t) => {
      const user = await signUp(a)
      await cached(t, b, user)
      const { rows } = await sqlClient.query(
        `select pid from pg_stat_activity where datname = current_database() and application_name = 'listen auth_cache'`,
      )
      t.equal(rows.length, 2, "A's and B's listeners")
      await sqlClient.query('select pg_terminate_backend(pid) from unnest($1::int[]) as pid', [rows.map((r) => r.pid)])
      // Killed: the backends are gone (pg_terminate_backend only signals them).
      await within(HEARD_WITHIN_MS, async () => {
        const left = await sqlClient.query('select 1 from pg_stat_activity where pid = any($1::int[])', [rows.map((r) => r.pid)])
        return left.rowCount === 0
      })
      await sqlClient.query('delete from "session" where user_id = $1', [user.id])
      t.equal((await whoami(b, user)).statusCode, 401, 'the deleted session is refused at once, not served from memory')

      const recovered = await signUp(a)
      latencies['listener back after kill'] = await within(10_000, async () => b.sessionCache.listening)
      t.equal((await b.inject({ method: 'GET', url: '/api/health' })).json().sessionCache, 'listening')
      await cached(t, b, recovered)
    })

    t.test('latencies seen (ms)', async (t) => {
      // Each was held to its own deadline above (a listener's reconnection waits out its backoff).
      t.comment(JSON.stringify(latencies))
      t.equal(Object.keys(latencies).length, 12, 'every change was seen')
    })
  },
)
