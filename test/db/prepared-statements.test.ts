// The hot statements (db/prepared.ts) run as named prepared statements on PostgreSQL, and nothing
// else does: every other query stays unnamed, so the server keeps no plan per query shape.
import { sql } from 'kysely'
import t from 'tap'
import { openDatabase } from '../../db/index.js'
import { migrateToLatest } from '../../db/migrate.js'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { call, signUp, TEST_ENV } from '../helpers/app.js'
import { freshPostgresUrl, usingPostgres } from '../helpers/db.js'

if (!usingPostgres()) {
  t.skip(
    'DATABASE_URL is not set: named prepared statements are a PostgreSQL-server feature (PGlite runs the same text unnamed)',
    async () => {},
  )
} else {
  // One connection: every request's queries and the check below share the same server session.
  const database = await openDatabase({ url: await freshPostgresUrl(), pgliteDir: 'memory://', poolSize: 1 })
  t.teardown(() => database.close())
  await migrateToLatest(database.db)
  const app = await buildApp(loadConfig(TEST_ENV), { database })
  t.teardown(() => app.close())

  const prepared = async () =>
    (await sql<{ name: string }>`select name from pg_prepared_statements order by name`.execute(database.db)).rows.map(
      (r) => r.name,
    )

  t.test('the session lookup and the usage counter are prepared once, by name', async (t) => {
    const user = await signUp(app)
    t.same(await prepared(), [], 'sign-up alone prepared nothing')

    for (let i = 0; i < 3; i++)
      t.equal((await call(app, 'GET', '/api/auth/get-session', { cookie: user.cookie })).json().user.id, user.id)
    t.same(await prepared(), ['session_lookup'])

    t.equal((await call(app, 'GET', '/api/v1/profile', { cookie: user.cookie })).statusCode, 200)
    const res = await call(app, 'POST', '/api/v1/usage/aiMessages/increment', { cookie: user.cookie, body: {} })
    t.equal(res.statusCode, 200)
    t.equal(res.json().used, 1)
    // A count of its own goes through the count writer's statement (src/usage/count-writer.ts).
    t.same(await prepared(), ['session_lookup', 'usage_add_many_async_commit'])
  })

  t.test('a count of its own commits asynchronously for itself only; a count inside a write stays durable', async (t) => {
    const setting = async () =>
      (await sql<{ synchronous_commit: string }>`show synchronous_commit`.execute(database.db)).rows[0]!.synchronous_commit
    const user = await signUp(app)
    t.equal((await call(app, 'POST', '/api/v1/usage/aiMessages/increment', { cookie: user.cookie, body: {} })).statusCode, 200)
    t.equal(await setting(), 'on', 'the setting ended with that statement: the connection commits durably again')

    const entry = await call(app, 'POST', '/api/v1/journal/entries', {
      cookie: user.cookie,
      body: { content: 'a durable entry', mood: 3 },
    })
    t.equal(entry.statusCode, 201)
    t.ok((await prepared()).includes('usage_add'), 'the entry counted with the in-transaction statement')
    t.equal(await setting(), 'on')
  })

  t.test('a statement prepared on a connection still sees rows written after it was prepared', async (t) => {
    const user = await signUp(app)
    t.equal((await call(app, 'GET', '/api/auth/get-session', { cookie: user.cookie })).json().user.role, 'member')
    await database.db.updateTable('user').set({ role: 'admin' }).where('id', '=', user.id).execute()
    t.equal((await call(app, 'GET', '/api/auth/get-session', { cookie: user.cookie })).json().user.role, 'admin')
  })
}
