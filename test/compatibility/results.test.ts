import t from 'tap'
import { assertResultOwned, grantDeepInsights, revokeDeepInsights } from '../../src/compatibility/service.js'
import { buildTestApp, call, createAs, signUp, signUpWithRole, type TestUser } from '../helpers/app.js'
import { anonymousWritesChangeNothing, auditedModerationRead, countRows } from '../helpers/expect.js'

let nowMs = Date.parse('2026-04-15T10:00:00.000Z')
const tick = (ms = 1) => {
  nowMs += ms
}
const app = await buildTestApp({ deps: { clock: { now: () => new Date(nowMs) } } })

const RESULTS = '/api/v1/compatibility/results'
const result = (overrides: Record<string, unknown> = {}) => ({
  partner: {
    name: 'Bima',
    birthDate: '1992-11-09',
    birthTime: '07:45',
    birthPlace: { name: 'Yogyakarta', latitude: -7.8, longitude: 110.36 },
  },
  systems: ['bazi', 'primbon'],
  score: 71,
  summary: { headline: 'Warm and steady', elements: { wood: 2, fire: 1 } },
  ...overrides,
})
const INSIGHTS = { chapters: [{ title: 'Communication', body: 'You listen; they lead.' }] }

async function withPlan(user: TestUser, plan: 'free' | 'premium' | 'premium_plus', expiresAt: Date | null = null) {
  await app.db.updateTable('user').set({ plan, plan_expires_at: expiresAt }).where('id', '=', user.id).execute()
  return user
}

const create = (user: TestUser, body: Record<string, unknown> = result()) =>
  createAs<{ id: string; userId: string; createdAt: string }>(app, user, RESULTS, body)

const grant = (input: { userId: string; resultId: string; paymentId: string | null }) =>
  app.db.transaction().execute((trx) => grantDeepInsights(trx, { ...input, now: app.clock.now() }))
const revoke = (paymentId: string) =>
  app.db.transaction().execute((trx) => revokeDeepInsights(trx, { paymentId, now: app.clock.now() }))

/** Whether the result is unlocked, and by which payment, as stored. */
const unlockOf = (id: string) =>
  app.db
    .selectFrom('compatibility_result')
    .select(['deep_insights_unlocked', 'payment_id'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow()
const storedInsights = async (id: string) =>
  (await app.db.selectFrom('compatibility_result').select('deep_insights').where('id', '=', id).executeTakeFirstOrThrow())
    .deep_insights

const rowsOf = (userId: string) => countRows(app.db, 'compatibility_result', 'user_id', userId)

// That every compatibility route answers an anonymous caller 401 UNAUTHORIZED is proven for all
// routes by test/plugins/route-policy.test.ts; here, that such a write with a real result changes
// nothing.
t.test('an anonymous write to a real result stores nothing', async (t) => {
  await anonymousWritesChangeNothing(t, app, { create, rowsOf }, (id) => [
    ['POST', RESULTS, result()],
    ['POST', `${RESULTS}/${id}/unlock`, {}],
    ['PUT', `${RESULTS}/${id}/deep-insights`, { content: INSIGHTS }],
  ])
})

t.test('a member stores a result with the partner, the systems, the score and the lite summary', async (t) => {
  const member = await signUp(app)
  const res = await call(app, 'POST', RESULTS, { cookie: member.cookie, body: result() })
  t.equal(res.statusCode, 201)
  const body = res.json()
  t.same(body, {
    id: body.id,
    userId: member.id,
    partner: result().partner,
    systems: ['bazi', 'primbon'],
    score: 71,
    summary: result().summary,
    deepInsights: null,
    deepInsightsUnlocked: false,
    paymentId: null,
    createdAt: new Date(nowMs).toISOString(),
    updatedAt: new Date(nowMs).toISOString(),
  })
  const read = await call(app, 'GET', `${RESULTS}/${body.id}`, { cookie: member.cookie })
  t.same(read.json(), body)
  const minimal = await create(
    member,
    result({ partner: { name: 'Sari', birthDate: '2000-02-29' }, systems: ['human_design'], score: 0, summary: {} }),
  )
  t.ok(minimal.id, 'birth time and place are optional')
})

t.test('bad results are refused with 400 (413 past the body limit) and nothing is stored', async (t) => {
  const member = await withPlan(await signUp(app), 'premium_plus')
  const deep = (depth: number) => {
    let v: unknown = 'x'
    for (let i = 0; i < depth; i++) v = { a: v }
    return v as Record<string, unknown>
  }
  const bad: Array<[string, Record<string, unknown>]> = [
    ['unknown key', result({ userId: 'someone-else' })],
    ['unknown partner key', result({ partner: { name: 'B', birthDate: '1990-01-01', role: 'admin' } })],
    ['no systems', result({ systems: [] })],
    ['repeated system', result({ systems: ['bazi', 'bazi'] })],
    ['unknown system', result({ systems: ['tarot'] })],
    ['score 101', result({ score: 101 })],
    ['score -1', result({ score: -1 })],
    ['fractional score', result({ score: 50.5 })],
    ['empty partner name', result({ partner: { name: ' ', birthDate: '1990-01-01' } })],
    ['long partner name', result({ partner: { name: 'x'.repeat(101), birthDate: '1990-01-01' } })],
    ['impossible birth date', result({ partner: { name: 'B', birthDate: '1990-02-30' } })],
    ['future birth date', result({ partner: { name: 'B', birthDate: '2026-04-16' } })],
    ['birth time 24:00', result({ partner: { name: 'B', birthDate: '1990-01-01', birthTime: '24:00' } })],
    [
      'latitude 91',
      result({ partner: { name: 'B', birthDate: '1990-01-01', birthPlace: { name: 'X', latitude: 91, longitude: 0 } } }),
    ],
    ['summary is an array', result({ summary: [1, 2] })],
    ['summary is a string', result({ summary: 'great' })],
    ['summary over 32 KiB', result({ summary: { text: 'x'.repeat(33 * 1024) } })],
    ['summary nested 40 deep', result({ summary: deep(40) })],
    ['NUL in summary', result({ summary: { text: 'a\u0000b' } })],
    ['NUL in a summary key', result({ summary: { 'a\u0000': 1 } })],
  ]
  for (const [name, body] of bad) {
    const res = await call(app, 'POST', RESULTS, { cookie: member.cookie, body })
    t.equal(res.statusCode, 400, name)
    t.equal(res.json().code, 'VALIDATION_ERROR', name)
  }
  const huge = await call(app, 'POST', RESULTS, {
    cookie: member.cookie,
    body: result({ summary: { text: 'x'.repeat(70 * 1024) } }),
  })
  t.equal(huge.statusCode, 413)
  t.equal(huge.json().code, 'PAYLOAD_TOO_LARGE')
  await create(member, result({ partner: { name: 'B', birthDate: '2026-04-15' }, summary: { text: 'x'.repeat(30 * 1024) } }))
  t.equal(await rowsOf(member.id), 1, 'only the valid one (born today, 30 KiB summary) was stored')
})

t.test('the free plan allows 3 checks a month: the 4th is 402 and stores nothing', async (t) => {
  const member = await signUp(app)
  for (let i = 0; i < 3; i++) await create(member)
  const refused = await call(app, 'POST', RESULTS, { cookie: member.cookie, body: result() })
  t.equal(refused.statusCode, 402)
  t.match(refused.json(), { code: 'PLAN_LIMIT_REACHED', data: { metric: 'compatibilityChecks', limit: 3, used: 3 } })
  t.equal(await rowsOf(member.id), 3)
})

t.test("another member's result is 404 on get, unlock and save; unknown ids too", async (t) => {
  const owner = await signUp(app)
  const stranger = await withPlan(await signUp(app), 'premium_plus')
  const { id } = await create(owner, result({ summary: { secret: 'between us' } }))
  const attempts: Array<[string, string, unknown]> = [
    ['GET', '', undefined],
    ['POST', '/unlock', {}],
    ['PUT', '/deep-insights', { content: INSIGHTS }],
  ]
  for (const [method, suffix, body] of attempts) {
    const res = await call(app, method as 'GET', `${RESULTS}/${id}${suffix}`, { cookie: stranger.cookie, body })
    t.equal(res.statusCode, 404, `${method} ${suffix}`)
    t.match(res.json(), { code: 'NOT_FOUND' })
    t.notMatch(res.body, /between us/)
    const unknown = await call(app, method as 'GET', `${RESULTS}/nope${suffix}`, { cookie: stranger.cookie, body })
    t.same(unknown.json(), res.json(), 'an unknown id answers exactly the same')
  }
  const row = await app.db.selectFrom('compatibility_result').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  t.equal(row.deep_insights_unlocked, false, 'a premium_plus stranger did not unlock it')
  t.equal(row.deep_insights, null)
})

t.test('an id that cannot be an id is a 400, never a database error', async (t) => {
  const member = await signUp(app)
  for (const [method, suffix, body] of [
    ['GET', '', undefined],
    ['POST', '/unlock', {}],
    ['PUT', '/deep-insights', { content: INSIGHTS }],
  ] as const) {
    const res = await call(app, method, `${RESULTS}/a%00b${suffix}`, { cookie: member.cookie, body })
    t.equal(res.statusCode, 400, `${method} ${suffix}`)
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }
})

t.test('admins and owners read any result, audited, but cannot unlock or write it', async (t) => {
  const member = await signUp(app)
  const { id } = await create(member)
  for (const role of ['admin', 'owner'] as const) {
    const moderator = await withPlan(await signUpWithRole(app, role), 'premium_plus')
    const res = await call(app, 'GET', `${RESULTS}/${id}`, { cookie: moderator.cookie })
    t.equal(res.statusCode, 200, role)
    t.equal(res.json().userId, member.id)
    t.equal(res.json().deepInsights, null)
    await auditedModerationRead(t, app.db, {
      moderatorId: moderator.id,
      role,
      action: 'compatibility.result.read_by_admin',
      targetType: 'compatibility_result',
      targetId: id,
      ownerId: member.id,
    })
    t.equal((await call(app, 'POST', `${RESULTS}/${id}/unlock`, { cookie: moderator.cookie, body: {} })).statusCode, 404)
    t.equal(
      (await call(app, 'PUT', `${RESULTS}/${id}/deep-insights`, { cookie: moderator.cookie, body: { content: INSIGHTS } }))
        .statusCode,
      404,
    )
  }
})

t.test('unlocking without a purchase or premium_plus is 402 PAYMENT_REQUIRED', async (t) => {
  for (const [plan, expires] of [
    ['free', null],
    ['premium', null],
    ['premium_plus', new Date(nowMs - 1000)],
  ] as const) {
    const member = await withPlan(await signUp(app), plan, expires)
    const { id } = await create(member)
    const res = await call(app, 'POST', `${RESULTS}/${id}/unlock`, { cookie: member.cookie, body: { paymentId: 'made-up' } })
    t.equal(res.statusCode, 402, `${plan}${expires ? ' (expired)' : ''}`)
    t.same(res.json().data, { product: 'deep_insights', resultId: id })
    t.equal(res.json().code, 'PAYMENT_REQUIRED')
    const row = await unlockOf(id)
    t.same(row, { deep_insights_unlocked: false, payment_id: null }, "the client's paymentId is not trusted")
  }
})

t.test('premium_plus unlocks any of its results, idempotently', async (t) => {
  const member = await withPlan(await signUp(app), 'premium_plus', new Date(nowMs + 86_400_000))
  const { id } = await create(member)
  const first = await call(app, 'POST', `${RESULTS}/${id}/unlock`, { cookie: member.cookie })
  t.equal(first.statusCode, 200, 'the body may be left out')
  t.match(first.json(), { id, deepInsightsUnlocked: true, deepInsights: null, paymentId: null })
  const again = await call(app, 'POST', `${RESULTS}/${id}/unlock`, { cookie: member.cookie, body: {} })
  t.equal(again.statusCode, 200)
  t.same(again.json(), first.json())
  const bad = await call(app, 'POST', `${RESULTS}/${id}/unlock`, { cookie: member.cookie, body: { paymentId: 'p', extra: 1 } })
  t.equal(bad.statusCode, 400)
})

t.test('a paid purchase unlocks the result for a free member and records its paymentId', async (t) => {
  const member = await signUp(app)
  const { id } = await create(member)
  await grant({ userId: member.id, resultId: id, paymentId: 'pay_unlock_1' })
  const res = await call(app, 'POST', `${RESULTS}/${id}/unlock`, { cookie: member.cookie, body: { paymentId: 'pay_unlock_1' } })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { deepInsightsUnlocked: true, paymentId: 'pay_unlock_1' })
})

t.test('deep insights are saved only on an unlocked result, and only shown while unlocked', async (t) => {
  const member = await signUp(app)
  const { id } = await create(member)
  const locked = await call(app, 'PUT', `${RESULTS}/${id}/deep-insights`, { cookie: member.cookie, body: { content: INSIGHTS } })
  t.equal(locked.statusCode, 402)
  t.same(locked.json().data, { product: 'deep_insights', resultId: id })
  t.equal(await storedInsights(id), null)

  await grant({ userId: member.id, resultId: id, paymentId: 'pay_save_1' })
  tick(1000)
  const saved = await call(app, 'PUT', `${RESULTS}/${id}/deep-insights`, { cookie: member.cookie, body: { content: INSIGHTS } })
  t.equal(saved.statusCode, 200)
  t.same(saved.json().deepInsights, INSIGHTS)
  t.equal(saved.json().updatedAt, new Date(nowMs).toISOString())
  t.same((await call(app, 'GET', `${RESULTS}/${id}`, { cookie: member.cookie })).json().deepInsights, INSIGHTS)

  const list = await call(app, 'GET', RESULTS, { cookie: member.cookie })
  const item = list.json().items.find((r: { id: string }) => r.id === id)
  t.equal(item.deepInsightsUnlocked, true)
  t.notOk('deepInsights' in item, 'the list never carries deep insights')
  t.notMatch(list.body, /Communication/)

  await revoke('pay_save_1')
  const hidden = await call(app, 'GET', `${RESULTS}/${id}`, { cookie: member.cookie })
  t.match(hidden.json(), { deepInsightsUnlocked: false, deepInsights: null })
  t.notMatch(hidden.body, /Communication/, 'refunded: stored insights stay hidden')
  t.notMatch((await call(app, 'GET', RESULTS, { cookie: member.cookie })).body, /Communication/)
  t.equal(
    (await call(app, 'PUT', `${RESULTS}/${id}/deep-insights`, { cookie: member.cookie, body: { content: INSIGHTS } })).statusCode,
    402,
  )
})

t.test('a locked result with stored insights never leaks them through get or list', async (t) => {
  const member = await signUp(app)
  const admin = await signUpWithRole(app, 'admin')
  const { id } = await create(member)
  await app.db
    .updateTable('compatibility_result')
    .set({ deep_insights: JSON.stringify({ leak: 'TOP-SECRET' }) })
    .where('id', '=', id)
    .execute()
  for (const viewer of [member, admin]) {
    const one = await call(app, 'GET', `${RESULTS}/${id}`, { cookie: viewer.cookie })
    t.equal(one.json().deepInsights, null)
    t.notMatch(one.body, /TOP-SECRET/)
  }
  t.notMatch((await call(app, 'GET', `${RESULTS}?limit=100`, { cookie: member.cookie })).body, /TOP-SECRET/)
})

t.test("oversized deep insights: 400 past 128 KiB, 413 past the route's body limit", async (t) => {
  const member = await withPlan(await signUp(app), 'premium_plus')
  const { id } = await create(member)
  await call(app, 'POST', `${RESULTS}/${id}/unlock`, { cookie: member.cookie, body: {} })
  const big = await call(app, 'PUT', `${RESULTS}/${id}/deep-insights`, {
    cookie: member.cookie,
    body: { content: { text: 'x'.repeat(120 * 1024) } },
  })
  t.equal(big.statusCode, 200, '120 KiB fits (over the default 64 KiB body limit)')
  const over = await call(app, 'PUT', `${RESULTS}/${id}/deep-insights`, {
    cookie: member.cookie,
    body: { content: { text: 'y'.repeat(130 * 1024) } },
  })
  t.equal(over.statusCode, 400)
  t.equal(over.json().code, 'VALIDATION_ERROR')
  const huge = await call(app, 'PUT', `${RESULTS}/${id}/deep-insights`, {
    cookie: member.cookie,
    body: { content: { text: 'z'.repeat(210 * 1024) } },
  })
  t.equal(huge.statusCode, 413)
  for (const body of [{}, { content: [] }, { content: 'text' }, { content: {}, extra: true }]) {
    t.equal(
      (await call(app, 'PUT', `${RESULTS}/${id}/deep-insights`, { cookie: member.cookie, body })).statusCode,
      400,
      JSON.stringify(body),
    )
  }
  t.equal(
    ((await storedInsights(id)) as { text: string }).text.length,
    120 * 1024,
    'refused writes left the stored insights alone',
  )
})

t.test('grantDeepInsights is idempotent for one payment and refuses conflicts', async (t) => {
  const member = await signUp(app)
  const other = await signUp(app)
  const { id } = await create(member)
  const { id: second } = await create(member)
  const { id: foreign } = await create(other)

  await grant({ userId: member.id, resultId: id, paymentId: 'pay_g1' })
  await grant({ userId: member.id, resultId: id, paymentId: 'pay_g1' })
  const purchases = await app.db.selectFrom('deep_insights_purchase').selectAll().where('result_id', '=', id).execute()
  t.equal(purchases.length, 1, 'one purchase for one payment, however often granted')
  t.match(purchases[0], { user_id: member.id, payment_id: 'pay_g1', status: 'active', revoked_at: null })
  const row = await unlockOf(id)
  t.same(row, { deep_insights_unlocked: true, payment_id: 'pay_g1' })

  const conflicts: Array<[string, { userId: string; resultId: string; paymentId: string | null }]> = [
    ['another payment for an unlocked result', { userId: member.id, resultId: id, paymentId: 'pay_g2' }],
    ['a result of another user', { userId: member.id, resultId: foreign, paymentId: 'pay_g3' }],
    ['a result that does not exist', { userId: member.id, resultId: 'missing', paymentId: 'pay_g4' }],
    ['the same payment for another result', { userId: member.id, resultId: second, paymentId: 'pay_g1' }],
  ]
  for (const [name, input] of conflicts) {
    await t.rejects(grant(input), { status: 409, code: 'CONFLICT' }, name)
  }
  t.equal(
    (await app.db.selectFrom('deep_insights_purchase').selectAll().where('user_id', 'in', [member.id, other.id]).execute())
      .length,
    1,
    'no purchase written by a refused grant',
  )
  const foreignRow = await unlockOf(foreign)
  t.equal(foreignRow.deep_insights_unlocked, false)

  // An imported or manual grant without a payment reference.
  await grant({ userId: member.id, resultId: second, paymentId: null })
  await grant({ userId: member.id, resultId: second, paymentId: null })
  t.equal((await app.db.selectFrom('deep_insights_purchase').selectAll().where('result_id', '=', second).execute()).length, 1)
  const secondRow = await unlockOf(second)
  t.same(secondRow, { deep_insights_unlocked: true, payment_id: null })
})

t.test('two payments granting one result at the same time: one wins, the other is a 409', async (t) => {
  const member = await signUp(app)
  const { id } = await create(member)
  const outcomes = await Promise.allSettled([
    grant({ userId: member.id, resultId: id, paymentId: 'pay_race_a' }),
    grant({ userId: member.id, resultId: id, paymentId: 'pay_race_b' }),
  ])
  t.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1)
  const failure = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult
  t.match(failure.reason, { status: 409, code: 'CONFLICT' })
  const purchases = await app.db.selectFrom('deep_insights_purchase').selectAll().where('result_id', '=', id).execute()
  t.equal(purchases.length, 1)
  const row = await unlockOf(id)
  t.equal(row.payment_id, purchases[0]!.payment_id, 'the result records the winning payment')
})

t.test('a grant inside a transaction that fails leaves nothing behind', async (t) => {
  const member = await signUp(app)
  const { id } = await create(member)
  await t.rejects(
    app.db.transaction().execute(async (trx) => {
      await grantDeepInsights(trx, { userId: member.id, resultId: id, paymentId: 'pay_rollback', now: app.clock.now() })
      throw new Error('the payment transition failed')
    }),
  )
  t.same(await app.db.selectFrom('deep_insights_purchase').selectAll().where('payment_id', '=', 'pay_rollback').execute(), [])
  const row = await unlockOf(id)
  t.equal(row.deep_insights_unlocked, false)
})

t.test('revokeDeepInsights re-locks the result; a revoked payment cannot grant again', async (t) => {
  const member = await signUp(app)
  const { id } = await create(member)
  await grant({ userId: member.id, resultId: id, paymentId: 'pay_r1' })
  await revoke('pay_r1')
  await revoke('pay_r1')
  await revoke('pay_never_seen')
  const purchase = await app.db
    .selectFrom('deep_insights_purchase')
    .selectAll()
    .where('payment_id', '=', 'pay_r1')
    .executeTakeFirstOrThrow()
  t.equal(purchase.status, 'revoked')
  t.ok(purchase.revoked_at instanceof Date)
  const row = await unlockOf(id)
  t.equal(row.deep_insights_unlocked, false)
  const unlock = await call(app, 'POST', `${RESULTS}/${id}/unlock`, { cookie: member.cookie, body: {} })
  t.equal(unlock.statusCode, 402, 'the refunded purchase no longer unlocks')

  await t.rejects(
    grant({ userId: member.id, resultId: id, paymentId: 'pay_r1' }),
    { status: 409, code: 'CONFLICT' },
    'a revoked payment',
  )
  await grant({ userId: member.id, resultId: id, paymentId: 'pay_r2' })
  const again = await call(app, 'POST', `${RESULTS}/${id}/unlock`, { cookie: member.cookie, body: {} })
  t.match(again.json(), { deepInsightsUnlocked: true, paymentId: 'pay_r2' }, 'a new payment unlocks it again')

  await revoke('pay_r2')
  await withPlan(member, 'premium_plus')
  const plus = await call(app, 'POST', `${RESULTS}/${id}/unlock`, { cookie: member.cookie, body: {} })
  t.equal(plus.statusCode, 200, 'premium_plus unlocks a refunded result through the route')
  t.equal(plus.json().deepInsightsUnlocked, true)
})

t.test('assertResultOwned accepts the owner and answers 404 to anyone else', async (t) => {
  const member = await signUp(app)
  const other = await signUp(app)
  const { id } = await create(member)
  await t.resolves(assertResultOwned(app.db, member.id, id))
  await t.rejects(assertResultOwned(app.db, other.id, id), { status: 404, code: 'NOT_FOUND' })
  await t.rejects(assertResultOwned(app.db, member.id, 'missing'), { status: 404, code: 'NOT_FOUND' }, 'an unknown result')
})

t.test("results page newest first by cursor and a cursor never reaches another user's results", async (t) => {
  const member = await withPlan(await signUp(app), 'premium_plus')
  const other = await withPlan(await signUp(app), 'premium_plus')
  const mine: string[] = []
  for (let i = 0; i < 7; i++) {
    if (i % 2 === 0) tick()
    mine.push((await create(member, result({ score: i }))).id)
    await create(other)
  }
  const seen: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const res = await call(app, 'GET', `${RESULTS}?limit=3${cursor ? `&cursor=${cursor}` : ''}`, { cookie: member.cookie })
    t.equal(res.statusCode, 200)
    const page = res.json() as { items: Array<{ id: string; userId: string }>; nextCursor: string | null }
    t.ok(page.items.every((r) => r.userId === member.id))
    seen.push(...page.items.map((r) => r.id))
    cursor = page.nextCursor
    pages++
    await create(member) // arrives while paging: newer than every cursor
  } while (cursor && pages < 20)
  t.equal(pages, 3)
  t.same(seen.filter((id) => mine.includes(id)).sort(), [...mine].sort())
  t.equal(new Set(seen).size, seen.length)

  const theirs = await app.db
    .selectFrom('compatibility_result')
    .select(['id', 'created_at'])
    .where('user_id', '=', other.id)
    .orderBy('created_at', 'desc')
    .executeTakeFirstOrThrow()
  const forged = Buffer.from(
    JSON.stringify({ c: new Date(theirs.created_at.getTime() + 1).toISOString(), i: theirs.id }),
  ).toString('base64url')
  const res = await call(app, 'GET', `${RESULTS}?limit=100&cursor=${forged}`, { cookie: member.cookie })
  t.equal(res.statusCode, 200)
  t.ok(res.json().items.length > 0)
  t.ok(res.json().items.every((r: { userId: string }) => r.userId === member.id))
  for (const bad of ['%%%', 'eyJ4IjoxfQ', 'abc', 'limit']) {
    t.equal((await call(app, 'GET', `${RESULTS}?cursor=${bad}`, { cookie: member.cookie })).statusCode, 400, bad)
  }
  t.equal((await call(app, 'GET', `${RESULTS}?limit=101`, { cookie: member.cookie })).statusCode, 400)
  t.equal((await call(app, 'GET', `${RESULTS}?mood=3`, { cookie: member.cookie })).statusCode, 400)
})

t.test("a deleted user's results and purchases are gone with them", async (t) => {
  const member = await signUp(app)
  const { id } = await create(member)
  await grant({ userId: member.id, resultId: id, paymentId: 'pay_cascade' })
  await app.db.deleteFrom('user').where('id', '=', member.id).execute()
  t.equal(await rowsOf(member.id), 0)
  t.same(await app.db.selectFrom('deep_insights_purchase').selectAll().where('payment_id', '=', 'pay_cascade').execute(), [])
})
