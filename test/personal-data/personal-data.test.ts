import { sql } from 'kysely'
import t from 'tap'
import { issueToken } from '../../src/auth/links/verification.js'
import { EXPORTED_TABLES } from '../../src/personal-data/queries.js'
import { EXAMPLE_PROFILE } from '../../src/profile/schemas.js'
import { buildTestApp, call, signUp, signUpWithRole, type TestUser } from '../helpers/app.js'
import { auditEvents, countRows } from '../helpers/expect.js'

const app = await buildTestApp()

/** Everything a user can create through the API, so that the export and the deletion have something to find. */
async function seed(user: TestUser) {
  const ok = (res: { statusCode: number; body: string }, status = 201) => {
    if (res.statusCode !== status) throw new Error(`${res.statusCode} ${res.body}`)
    return JSON.parse(res.body)
  }
  const second = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: user.email, password: user.password } })
  ok(second, 200)
  const entries = [
    ok(
      await call(app, 'POST', '/api/v1/journal/entries', {
        cookie: user.cookie,
        body: { content: `diary of ${user.email}`, mood: 3 },
      }),
    ),
    ok(
      await call(app, 'POST', '/api/v1/journal/entries', {
        cookie: user.cookie,
        body: { content: 'second entry', mood: 5, tags: ['calm'] },
      }),
    ),
  ]
  const result = ok(
    await call(app, 'POST', '/api/v1/compatibility/results', {
      cookie: user.cookie,
      body: { partner: { name: 'Bima', birthDate: '1992-11-09' }, systems: ['bazi'], score: 71, summary: { lite: true } },
    }),
  )
  const payment = ok(
    await call(app, 'POST', '/api/v1/payments/checkout', {
      cookie: user.cookie,
      body: { product: 'deep_insights', resultId: result.id, returnUrl: '/done' },
    }),
  )
  const consent = ok(
    await call(app, 'POST', '/api/v1/consent', { cookie: user.cookie, body: { type: 'terms', version: '7', granted: true } }),
  )
  ok(await call(app, 'POST', '/api/v1/usage/aiMessages/increment', { cookie: user.cookie, body: { amount: 2 } }), 200)
  return { entries, result, payment, consent }
}

const rowsOf = (table: string, column: string, value: string) => countRows(app.db, table, column, value)

/** Every (table, column) of text, json or array type in the database. */
async function textColumns() {
  const { rows } = await sql<{ table_name: string; column_name: string }>`
    select table_name, column_name from information_schema.columns
    where table_schema = current_schema() and data_type in ('text', 'jsonb', 'character varying', 'ARRAY')
      and table_name <> 'kysely_migration' and table_name <> 'kysely_migration_lock'`.execute(app.db)
  return rows
}

/** Where a string occurs anywhere in the database, as `table.column`. */
async function occurrences(needle: string): Promise<string[]> {
  const found: string[] = []
  for (const { table_name, column_name } of await textColumns()) {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from ${sql.table(table_name)} where strpos(${sql.ref(column_name)}::text, ${needle}) > 0`.execute(
      app.db,
    )
    if (rows[0]!.n > 0) found.push(`${table_name}.${column_name}`)
  }
  return found.sort()
}

const alice = await signUp(app, { name: 'Alice Export' })
const bob = await signUp(app, { name: 'Bob Bystander' })
const aliceData = await seed(alice)
const bobData = await seed(bob)

t.test('the export holds every record seeded for the user', async (t) => {
  const res = await call(app, 'GET', '/api/v1/me/export', { cookie: alice.cookie })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-disposition'], /attachment/)
  t.equal(res.headers['cache-control'], 'no-store')
  const doc = res.json()
  t.match(doc.profile, { id: alice.id, email: alice.email, name: 'Alice Export', role: 'member', plan: 'free' })
  t.equal(doc.sessions.length, 2)
  const sessionIds = (await app.db.selectFrom('session').select('id').where('user_id', '=', alice.id).execute()).map((r) => r.id)
  t.same(doc.sessions.map((s: { id: string }) => s.id).sort(), sessionIds.sort())
  t.match(doc.accounts, [{ providerId: 'credential', accountId: alice.id, createdAt: String }])
  t.same(doc.journalEntries.map((e: { id: string }) => e.id).sort(), aliceData.entries.map((e) => e.id).sort())
  t.match(
    doc.journalEntries.find((e: { id: string }) => e.id === aliceData.entries[0].id),
    { content: `diary of ${alice.email}`, mood: 3 },
  )
  t.match(doc.compatibilityResults, [{ id: aliceData.result.id, score: 71, partner: { name: 'Bima' }, summary: { lite: true } }])
  t.match(doc.payments, [{ id: aliceData.payment.paymentId, product: 'deep_insights', status: 'pending' }])
  t.match(doc.consents, [{ id: aliceData.consent.id, type: 'terms', version: '7', granted: true }])
  t.notOk('seq' in doc.consents[0], "the consent log's ordering number is internal")
  t.notOk('grantSeq' in doc.payments[0], 'so is the order of grants')
  const usage = Object.fromEntries(doc.usageCounters.map((c: { metric: string; used: number }) => [c.metric, c.used]))
  t.same(usage, { aiMessages: 2, journalEntries: 2, compatibilityChecks: 1 }, 'the counters the API calls made')
  const actions = doc.auditEvents.map((e: { action: string }) => e.action)
  t.ok(actions.includes('auth.sign_up') && actions.includes('auth.sign_in'))
  for (const key of ['verifications', 'deepInsightsPurchases']) t.ok(Array.isArray(doc[key]), key)
})

t.test('every table that refers to a user is part of the export', async (t) => {
  const { rows } = await sql<{ table_name: string }>`
    select distinct table_name from information_schema.columns
    where table_schema = current_schema() and column_name = 'user_id'`.execute(app.db)
  for (const { table_name } of rows) t.ok(EXPORTED_TABLES.includes(table_name), `${table_name} is exported`)
})

t.test('the export holds nothing of other users and no secret', async (t) => {
  const text = (await call(app, 'GET', '/api/v1/me/export', { cookie: alice.cookie })).body
  for (const value of [
    bob.id,
    bob.email,
    bobData.result.id,
    bobData.payment.paymentId,
    bobData.consent.id,
    ...bobData.entries.map((e) => e.id),
  ]) {
    t.notOk(text.includes(value), `no ${value}`)
  }
  const secrets = [
    ...(await app.db.selectFrom('session').select('token_hash').where('user_id', '=', alice.id).execute()).map(
      (r) => r.token_hash,
    ),
    (await app.db.selectFrom('account').select('password_hash').where('user_id', '=', alice.id).executeTakeFirstOrThrow())
      .password_hash!,
    alice.cookie.split('=')[1]!.split('.')[0]!,
    alice.password,
  ]
  for (const secret of secrets) t.notOk(text.includes(secret), 'no token, hash or password')
  t.notOk(/tokenHash|passwordHash|"token"/.test(text))
})

// Without a session both routes are 401: test/plugins/route-policy.test.ts proves it for every route.
t.test('the export is audited', async (t) => {
  const events = await app.db
    .selectFrom('audit_event')
    .select('actor_id')
    .where('action', '=', 'personal_data.exported')
    .execute()
  t.ok(events.some((e) => e.actor_id === alice.id))
})

t.test('a wrong or missing password deletes nothing', async (t) => {
  const before = await occurrences(alice.id)
  for (const body of [{ password: 'wrong password!' }, {}, undefined]) {
    const res = await call(app, 'DELETE', '/api/v1/me', { cookie: alice.cookie, body })
    t.equal(res.statusCode, 401, JSON.stringify(body))
    t.equal(res.json().code, 'INVALID_PASSWORD')
  }
  t.same(await occurrences(alice.id), before)
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: alice.cookie })).statusCode, 200)
  const refused = await rowsOf('audit_event', 'target_id', alice.id)
  t.ok(refused > 0)
})

t.test('deletion validates its body', async (t) => {
  for (const body of [{ password: 'x', confirm: true }, { password: '' }, { password: 'x'.repeat(1025) }, { password: 1 }]) {
    const res = await call(app, 'DELETE', '/api/v1/me', { cookie: alice.cookie, body })
    t.equal(res.statusCode, 400, JSON.stringify(body))
  }
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: alice.cookie })).statusCode, 200)
})

t.test('deleting the account leaves only anonymised payments and consents', async (t) => {
  // An admin looked her up, and someone failed to sign in as her: both leave her email in the audit log.
  const admin = await signUpWithRole(app, 'admin')
  const search = await call(app, 'GET', `/api/v1/admin/users?email=${encodeURIComponent(alice.email.toUpperCase())}`, {
    cookie: admin.cookie,
  })
  t.equal(search.json().items.length, 1)
  await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: alice.email, password: 'not her password' } })
  t.ok((await occurrences(alice.email)).includes('audit_event.details'))
  const bobBefore = await occurrences(bob.id)
  const res = await call(app, 'DELETE', '/api/v1/me', { cookie: alice.cookie, body: { password: alice.password } })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  const cleared = ([] as string[]).concat(res.headers['set-cookie'] ?? [])
  t.ok(
    cleared.some((c) => /session_token=;/.test(c) && /Max-Age=0/i.test(c)),
    'the cookie is cleared',
  )

  // Both of her sessions are dead.
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: alice.cookie })).statusCode, 401)
  t.equal(await rowsOf('session', 'user_id', alice.id), 0)

  // The only rows that still carry her id are audit events (ids only, by design).
  t.same(await occurrences(alice.id), ['audit_event.actor_id', 'audit_event.target_id'])
  // Her email, name and diary text are nowhere.
  t.same(await occurrences(alice.email), [])
  t.same(await occurrences('Alice Export'), [])

  const payment = await app.db
    .selectFrom('payment')
    .selectAll()
    .where('id', '=', aliceData.payment.paymentId)
    .executeTakeFirstOrThrow()
  t.match(payment, { user_id: null, product: 'deep_insights', amount: 49000 })
  const consent = await app.db
    .selectFrom('consent_record')
    .selectAll()
    .where('id', '=', aliceData.consent.id)
    .executeTakeFirstOrThrow()
  t.match(consent, { user_id: null, type: 'terms', version: '7', granted: true, ip: null, user_agent: null })

  const deleted = await auditEvents(app.db, { action: 'account.deleted', targetId: alice.id })
  t.equal(deleted.length, 1)
  t.match(deleted[0], { target_type: 'user', ip: null, details: {} })

  // Bob is untouched.
  t.same(await occurrences(bob.id), bobBefore)
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: bob.cookie })).statusCode, 200)
  t.equal(
    (await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: alice.email, password: alice.password } })).statusCode,
    401,
  )
})

t.test('deleting the account scrubs the addresses it had before a change of email too', async (t) => {
  const admin = await signUpWithRole(app, 'admin')
  const dave = await signUp(app, { name: 'Dave Moves' })
  const former = dave.email
  // An admin looks him up by the address he has then (the search is audited with its filter).
  const search = await call(app, 'GET', `/api/v1/admin/users?email=${encodeURIComponent(former)}`, { cookie: admin.cookie })
  t.equal(search.json().items.length, 1)

  // He moves to a new address (the link of change-email, as mailed to the new address).
  const newEmail = `moved-${Date.now()}@example.com`
  const token = await issueToken(app.db, 'change-email-verification', dave.id, {
    expiresAt: new Date(Date.now() + 3_600_000),
    data: { email: former, newEmail, callbackURL: null },
  })
  const moved = await call(app, 'GET', `/api/auth/verify-email?token=${token}`, { cookie: dave.cookie })
  t.equal(moved.statusCode, 200, 'the address changed (its link opened where he is signed in)')
  const exported = (await call(app, 'GET', '/api/v1/me/export', { cookie: dave.cookie })).json()
  t.same(exported.profile.formerEmails, [former], 'the export shows the address he had before')

  t.equal((await call(app, 'DELETE', '/api/v1/me', { cookie: dave.cookie, body: { password: dave.password } })).statusCode, 204)
  t.same(await occurrences(former), [], 'the former address is nowhere, the audit log included')
  t.same(await occurrences(newEmail), [])
})

t.test('an account without a password is deleted with a recent sign-in', async (t) => {
  const user = await signUp(app)
  await app.db.deleteFrom('account').where('user_id', '=', user.id).execute() // as if it signed in with the identity provider
  const res = await call(app, 'DELETE', '/api/v1/me', { cookie: user.cookie })
  t.equal(res.statusCode, 204)
  t.equal(await rowsOf('user', 'id', user.id), 0)
})

t.test('an account without a password and an old session must sign in again first', async (t) => {
  const user = await signUp(app)
  await app.db.deleteFrom('account').where('user_id', '=', user.id).execute()
  await app.db
    .updateTable('session')
    .set({ created_at: new Date(Date.now() - 11 * 60_000) } as never)
    .where('user_id', '=', user.id)
    .execute()
  const res = await call(app, 'DELETE', '/api/v1/me', { cookie: user.cookie, body: { password: 'anything at all' } })
  t.equal(res.statusCode, 401)
  t.equal(res.json().code, 'INVALID_PASSWORD')
  t.equal(await rowsOf('user', 'id', user.id), 1)
})

t.test('an owner cannot delete their account through the API', async (t) => {
  const owner = await signUpWithRole(app, 'owner')
  const res = await call(app, 'DELETE', '/api/v1/me', { cookie: owner.cookie, body: { password: owner.password } })
  t.equal(res.statusCode, 403)
  t.equal(res.json().code, 'FORBIDDEN')
  t.equal(await rowsOf('user', 'id', owner.id), 1)
})

t.test('the export carries the profile fields: birth data, gender, locale and timezone', async (t) => {
  const carol = await signUp(app, { name: 'Carol Profile' })
  const { name: _name, ...profile } = EXAMPLE_PROFILE
  const updated = await call(app, 'PATCH', '/api/v1/profile', { cookie: carol.cookie, body: profile })
  t.equal(updated.statusCode, 200, updated.body)
  const res = await call(app, 'GET', '/api/v1/me/export', { cookie: carol.cookie })
  t.equal(res.statusCode, 200)
  t.match(res.json().profile, { id: carol.id, name: 'Carol Profile', ...profile })
  t.same(res.json().profile.birthPlace, profile.birthPlace)
})
