import { sql } from 'kysely'
import t from 'tap'
import { buildTestApp, call, createAs, signUp, signUpWithRole, type TestUser } from '../helpers/app.js'
import { anonymousWritesChangeNothing, auditedModerationRead, countRows } from '../helpers/expect.js'

// A clock the tests move by hand: usage periods, default entry dates and createdAt follow it.
let nowMs = Date.parse('2026-03-10T08:00:00.000Z')
const tick = (ms = 1) => {
  nowMs += ms
}
const app = await buildTestApp({ deps: { clock: { now: () => new Date(nowMs) } } })

const ENTRIES = '/api/v1/journal/entries'
const entry = (overrides: Record<string, unknown> = {}) => ({ content: 'Today was calm.', mood: 4, ...overrides })

async function premiumPlus(user: TestUser): Promise<TestUser> {
  await app.db.updateTable('user').set({ plan: 'premium_plus', plan_expires_at: null }).where('id', '=', user.id).execute()
  return user
}

const create = (user: TestUser, body: Record<string, unknown> = entry()) =>
  createAs<{ id: string; createdAt: string; entryDate: string; mood: number }>(app, user, ENTRIES, body)

const rowsOf = (userId: string) => countRows(app.db, 'journal_entry', 'user_id', userId)

// That every journal route answers an anonymous caller 401 UNAUTHORIZED is proven for all routes by
// test/plugins/route-policy.test.ts; here, that such a write with a real entry changes nothing.
t.test('an anonymous write to a real entry writes and deletes nothing', async (t) => {
  await anonymousWritesChangeNothing(t, app, { create, rowsOf }, (id) => [
    ['POST', ENTRIES, entry()],
    ['PATCH', `${ENTRIES}/${id}`, { mood: 1 }],
    ['DELETE', `${ENTRIES}/${id}`],
  ])
})

t.test('a member writes an entry with a mood, a label and tags', async (t) => {
  const member = await signUp(app)
  const res = await call(app, 'POST', ENTRIES, {
    cookie: member.cookie,
    body: {
      content: '  Walked by the river.  ',
      mood: 5,
      moodLabel: 'grateful',
      tags: ['walk', 'river', 'walk'],
      promptId: 'p001',
    },
  })
  t.equal(res.statusCode, 201)
  const body = res.json()
  t.same(body, {
    id: body.id,
    userId: member.id,
    content: 'Walked by the river.',
    mood: 5,
    moodLabel: 'grateful',
    tags: ['walk', 'river'],
    entryDate: '2026-03-10',
    promptId: 'p001',
    createdAt: new Date(nowMs).toISOString(),
    updatedAt: new Date(nowMs).toISOString(),
  })
  const read = await call(app, 'GET', `${ENTRIES}/${body.id}`, { cookie: member.cookie })
  t.equal(read.statusCode, 200)
  t.same(read.json(), body)
  const dated = await create(member, entry({ entryDate: '2025-12-31', mood: 1 }))
  t.equal(dated.entryDate, '2025-12-31')
})

t.test('bad entries are refused with 400 and nothing is stored', async (t) => {
  const member = await premiumPlus(await signUp(app))
  const bad: Array<[string, Record<string, unknown>]> = [
    ['unknown key', entry({ userId: 'someone-else' })],
    ['mood 0', entry({ mood: 0 })],
    ['mood 6', entry({ mood: 6 })],
    ['fractional mood', entry({ mood: 2.5 })],
    ['mood as text', entry({ mood: '4' })],
    ['no mood', { content: 'x' }],
    ['empty content', entry({ content: '' })],
    ['blank content', entry({ content: '   \n ' })],
    ['content over 20000 chars', entry({ content: 'a'.repeat(20_001) })],
    ['NUL in content', entry({ content: 'a\u0000b' })],
    ['lone surrogate in content', entry({ content: 'a\uD800b' })],
    ['11 tags', entry({ tags: Array.from({ length: 11 }, (_, i) => `t${i}`) })],
    ['empty tag', entry({ tags: [''] })],
    ['tag over 32 chars', entry({ tags: ['x'.repeat(33)] })],
    ['moodLabel over 50 chars', entry({ moodLabel: 'x'.repeat(51) })],
    ['not a date', entry({ entryDate: 'yesterday' })],
    ['Feb 29 of a common year', entry({ entryDate: '2023-02-29' })],
    ['month 13', entry({ entryDate: '2024-13-01' })],
    ['unpadded date', entry({ entryDate: '2024-1-1' })],
    ['datetime instead of date', entry({ entryDate: '2024-01-01T00:00:00Z' })],
    ['prompt id with spaces', entry({ promptId: 'p 1' })],
  ]
  for (const [name, body] of bad) {
    const res = await call(app, 'POST', ENTRIES, { cookie: member.cookie, body })
    t.equal(res.statusCode, 400, name)
    t.equal(res.json().code, 'VALIDATION_ERROR', name)
  }
  const valid29 = await create(member, entry({ entryDate: '2024-02-29', content: 'a'.repeat(20_000) }))
  t.equal(valid29.entryDate, '2024-02-29', 'a real leap day and the longest content are fine')
  t.equal(await rowsOf(member.id), 1)
})

t.test('the free plan stops at 5 entries a day: the 6th is 402 and stores nothing', async (t) => {
  const member = await signUp(app)
  for (let i = 0; i < 5; i++) await create(member, entry({ content: `entry ${i}` }))
  const refused = await call(app, 'POST', ENTRIES, { cookie: member.cookie, body: entry({ content: 'one too many' }) })
  t.equal(refused.statusCode, 402)
  t.match(refused.json(), { code: 'PLAN_LIMIT_REACHED', data: { metric: 'journalEntries', limit: 5, used: 5 } })
  t.equal(await rowsOf(member.id), 5, 'no sixth row')
  const usage = await app.db
    .selectFrom('usage_counter')
    .select('used')
    .where('user_id', '=', member.id)
    .where('metric', '=', 'journalEntries')
    .execute()
  t.same(
    usage.map((u) => u.used),
    [5],
    'the refused entry was not counted',
  )

  tick(24 * 3600_000)
  await create(member, entry({ content: 'a new day' }))
  t.equal(await rowsOf(member.id), 6, 'the next UTC day has a fresh allowance')
})

t.test('parallel entries at the free limit: exactly 5 are stored, the rest are 402', async (t) => {
  const member = await signUp(app)
  const results = await Promise.all(
    Array.from({ length: 9 }, (_, i) =>
      call(app, 'POST', ENTRIES, { cookie: member.cookie, body: entry({ content: `race ${i}` }) }),
    ),
  )
  t.same(results.map((r) => r.statusCode).sort(), [201, 201, 201, 201, 201, 402, 402, 402, 402])
  t.equal(await rowsOf(member.id), 5)
})

t.test('a refused validation does not count usage either', async (t) => {
  const member = await signUp(app)
  await call(app, 'POST', ENTRIES, { cookie: member.cookie, body: entry({ mood: 9 }) })
  const usage = await app.db.selectFrom('usage_counter').selectAll().where('user_id', '=', member.id).execute()
  t.same(usage, [])
})

t.test('pagination walks every entry exactly once while new entries arrive between pages', async (t) => {
  const member = await premiumPlus(await signUp(app))
  const original: string[] = []
  for (let i = 0; i < 23; i++) {
    // Groups of three share a millisecond, so the id breaks ties inside a createdAt.
    if (i % 3 === 0) tick()
    original.push((await create(member, entry({ content: `original ${i}` }))).id)
  }
  const seen: Array<{ id: string; createdAt: string }> = []
  let cursor: string | null = null
  let pages = 0
  do {
    const url: string = `${ENTRIES}?limit=5${cursor ? `&cursor=${cursor}` : ''}`
    const res = await call(app, 'GET', url, { cookie: member.cookie })
    t.equal(res.statusCode, 200)
    const page = res.json() as { items: Array<{ id: string; createdAt: string }>; nextCursor: string | null }
    t.ok(page.items.length <= 5)
    seen.push(...page.items)
    cursor = page.nextCursor
    pages++
    // Newer entries written while the client pages, some in the very same millisecond.
    await create(member, entry({ content: `newcomer ${pages}a` }))
    tick()
    await create(member, entry({ content: `newcomer ${pages}b` }))
  } while (cursor && pages < 50)

  const seenIds = seen.map((s) => s.id)
  t.equal(new Set(seenIds).size, seenIds.length, 'no entry appears twice')
  t.same([...seenIds].filter((id) => original.includes(id)).sort(), [...original].sort(), 'every original entry appears')
  for (let i = 1; i < seen.length; i++) {
    const a = seen[i - 1]!
    const b = seen[i]!
    t.ok(a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.id > b.id), 'strictly newest first')
  }
  t.equal(pages, 5, '23 entries in pages of 5')
})

t.test('the list filters by entry date range and mood', async (t) => {
  const member = await premiumPlus(await signUp(app))
  const specs: Array<[string, number]> = [
    ['2026-01-01', 1],
    ['2026-01-15', 3],
    ['2026-02-01', 3],
    ['2026-02-20', 5],
    ['2026-03-01', 3],
  ]
  for (const [entryDate, mood] of specs) {
    tick()
    await create(member, entry({ entryDate, mood }))
  }
  const list = async (query: string) => {
    const res = await call(app, 'GET', `${ENTRIES}?${query}`, { cookie: member.cookie })
    t.equal(res.statusCode, 200, query)
    return (res.json().items as Array<{ entryDate: string; mood: number }>).map((e) => `${e.entryDate}/${e.mood}`)
  }
  t.same(await list('from=2026-01-15&to=2026-02-20'), ['2026-02-20/5', '2026-02-01/3', '2026-01-15/3'])
  t.same(await list('mood=3'), ['2026-03-01/3', '2026-02-01/3', '2026-01-15/3'])
  t.same(await list('mood=3&to=2026-02-01'), ['2026-02-01/3', '2026-01-15/3'])
  t.same(await list('from=2026-03-01'), ['2026-03-01/3'])
  const paged = await call(app, 'GET', `${ENTRIES}?mood=3&limit=2`, { cookie: member.cookie })
  const next = await call(app, 'GET', `${ENTRIES}?mood=3&limit=2&cursor=${paged.json().nextCursor}`, { cookie: member.cookie })
  t.same(
    next.json().items.map((e: { entryDate: string }) => e.entryDate),
    ['2026-01-15'],
    'filters hold across pages',
  )
  t.equal(next.json().nextCursor, null)

  for (const query of [
    'from=2026-03-01&to=2026-01-01',
    'mood=0',
    'mood=6',
    'mood=x',
    'from=2026-02-30',
    'limit=0',
    'limit=101',
    'limit=abc',
    'sort=asc',
  ]) {
    const res = await call(app, 'GET', `${ENTRIES}?${query}`, { cookie: member.cookie })
    t.equal(res.statusCode, 400, query)
    t.equal(res.json().code, 'VALIDATION_ERROR', query)
  }
})

t.test("a garbled or forged cursor is a 400, and a cursor never reaches another user's entries", async (t) => {
  const mine = await premiumPlus(await signUp(app))
  const theirs = await premiumPlus(await signUp(app))
  const myIds: string[] = []
  const theirIds: string[] = []
  for (let i = 0; i < 4; i++) {
    tick()
    myIds.push((await create(mine)).id)
    theirIds.push((await create(theirs)).id)
  }
  const b64 = (s: string) => Buffer.from(s).toString('base64url')
  const garbled = [
    'not a cursor!',
    b64('not json'),
    b64('[]'),
    b64(JSON.stringify({ c: '2026-03-10T08:00:00.000Z' })),
    b64(JSON.stringify({ c: '2026-03-10T08:00:00.000Z', i: 'x', u: theirs.id })),
    b64(JSON.stringify({ c: '2026-03-10', i: 'x' })),
    b64(JSON.stringify({ c: '2026-02-30T08:00:00.000Z', i: 'x' })),
    b64(JSON.stringify({ c: 'yesterday', i: 'x' })),
    b64(JSON.stringify({ c: '2026-03-10T08:00:00.000Z', i: '' })),
    `${b64(JSON.stringify({ c: '2026-03-10T08:00:00.000Z', i: 'x' }))}==`,
    'A'.repeat(600),
  ]
  for (const cursor of garbled) {
    const res = await call(app, 'GET', `${ENTRIES}?cursor=${encodeURIComponent(cursor)}`, { cookie: mine.cookie })
    t.equal(res.statusCode, 400, cursor.slice(0, 40))
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }

  // A well-formed cursor built from the other user's newest entry only narrows my own list.
  const newestTheirs = await app.db
    .selectFrom('journal_entry')
    .select(['id', 'created_at'])
    .where('id', '=', theirIds[3]!)
    .executeTakeFirstOrThrow()
  const forged = b64(JSON.stringify({ c: new Date(newestTheirs.created_at.getTime() + 1).toISOString(), i: newestTheirs.id }))
  const res = await call(app, 'GET', `${ENTRIES}?cursor=${forged}&limit=100`, { cookie: mine.cookie })
  t.equal(res.statusCode, 200)
  const items = res.json().items as Array<{ id: string; userId: string }>
  t.ok(items.length > 0)
  t.ok(
    items.every((e) => e.userId === mine.id),
    'only my own entries',
  )
  t.same(items.map((e) => e.id).sort(), [...myIds].sort())
})

t.test("another member's entry is 404 on get, update and delete; unknown ids too", async (t) => {
  const owner = await signUp(app)
  const stranger = await signUp(app)
  const { id } = await create(owner, entry({ content: 'private' }))
  for (const [method, body] of [['GET'], ['PATCH', { mood: 1 }], ['DELETE']] as const) {
    const res = await call(app, method, `${ENTRIES}/${id}`, { cookie: stranger.cookie, body })
    t.equal(res.statusCode, 404, method)
    t.match(res.json(), { code: 'NOT_FOUND', status: 404 })
    t.notMatch(res.body, /private/)
    const unknown = await call(app, method, `${ENTRIES}/no-such-entry`, { cookie: stranger.cookie, body })
    t.same(unknown.json(), res.json(), `${method}: an unknown id answers exactly the same`)
  }
  const still = await app.db
    .selectFrom('journal_entry')
    .select(['content', 'mood'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow()
  t.same(still, { content: 'private', mood: 4 }, 'untouched')
  const audit = await app.db.selectFrom('audit_event').selectAll().where('target_id', '=', id).execute()
  t.same(audit, [], "a member's attempt is not a moderation read")
})

t.test('an id that cannot be an id is a 400, never a database error', async (t) => {
  const member = await signUp(app)
  for (const id of ['%00', 'a%00b', '%C3%A9t%C3%A9', 'two%20words']) {
    for (const [method, body] of [['GET'], ['PATCH', { mood: 1 }], ['DELETE']] as const) {
      const res = await call(app, method, `${ENTRIES}/${id}`, { cookie: member.cookie, body })
      t.equal(res.statusCode, 400, `${method} ${id}`)
      t.equal(res.json().code, 'VALIDATION_ERROR')
    }
  }
})

t.test('admins and owners read any entry, and each such read is audited', async (t) => {
  const member = await signUp(app)
  const { id } = await create(member, entry({ content: 'needs review' }))
  for (const role of ['admin', 'owner'] as const) {
    const moderator = await signUpWithRole(app, role)
    const res = await call(app, 'GET', `${ENTRIES}/${id}`, {
      cookie: moderator.cookie,
      headers: { 'x-forwarded-for': '198.51.100.7' },
    })
    t.equal(res.statusCode, 200, role)
    t.equal(res.json().content, 'needs review')
    await auditedModerationRead(t, app.db, {
      moderatorId: moderator.id,
      role,
      action: 'journal.entry.read_by_admin',
      targetType: 'journal_entry',
      targetId: id,
      ownerId: member.id,
    })
    const write = await call(app, 'PATCH', `${ENTRIES}/${id}`, { cookie: moderator.cookie, body: { content: 'edited by admin' } })
    t.equal(write.statusCode, 404, `${role} cannot edit someone else's entry`)
    const del = await call(app, 'DELETE', `${ENTRIES}/${id}`, { cookie: moderator.cookie })
    t.equal(del.statusCode, 404, `${role} cannot delete someone else's entry`)
  }
  const own = await signUpWithRole(app, 'admin')
  const mine = await create(own)
  await call(app, 'GET', `${ENTRIES}/${mine.id}`, { cookie: own.cookie })
  const ownEvents = await app.db.selectFrom('audit_event').selectAll().where('target_id', '=', mine.id).execute()
  t.same(ownEvents, [], 'an admin reading their own entry is not audited')
  t.equal(
    (await app.db.selectFrom('journal_entry').select('content').where('id', '=', id).executeTakeFirstOrThrow()).content,
    'needs review',
  )
})

t.test('a member updates some fields of an entry and leaves the rest', async (t) => {
  const member = await signUp(app)
  const created = await create(member, entry({ moodLabel: 'calm', tags: ['a'], promptId: 'p002' }))
  tick(5000)
  const res = await call(app, 'PATCH', `${ENTRIES}/${created.id}`, { cookie: member.cookie, body: { mood: 2, moodLabel: null } })
  t.equal(res.statusCode, 200)
  t.match(res.json(), {
    id: created.id,
    content: 'Today was calm.',
    mood: 2,
    moodLabel: null,
    tags: ['a'],
    promptId: 'p002',
    createdAt: created.createdAt,
  })
  t.equal(res.json().updatedAt, new Date(nowMs).toISOString())

  const more = await call(app, 'PATCH', `${ENTRIES}/${created.id}`, {
    cookie: member.cookie,
    body: { content: ' rewritten ', tags: [], entryDate: '2026-01-02', promptId: null },
  })
  t.match(more.json(), { content: 'rewritten', tags: [], entryDate: '2026-01-02', promptId: null, mood: 2 })

  for (const body of [
    {},
    { mood: 0 },
    { content: '' },
    { userId: member.id },
    { createdAt: '2020-01-01T00:00:00.000Z' },
    { tags: Array(11).fill('t') },
  ]) {
    const bad = await call(app, 'PATCH', `${ENTRIES}/${created.id}`, { cookie: member.cookie, body })
    t.equal(bad.statusCode, 400, JSON.stringify(body).slice(0, 60))
  }
  const after = await call(app, 'GET', `${ENTRIES}/${created.id}`, { cookie: member.cookie })
  t.same(after.json(), more.json(), 'refused updates changed nothing')
})

t.test('a member deletes an entry; it is gone and a second delete is 404', async (t) => {
  const member = await signUp(app)
  const { id } = await create(member)
  const res = await call(app, 'DELETE', `${ENTRIES}/${id}`, { cookie: member.cookie })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.equal((await call(app, 'GET', `${ENTRIES}/${id}`, { cookie: member.cookie })).statusCode, 404)
  t.equal((await call(app, 'DELETE', `${ENTRIES}/${id}`, { cookie: member.cookie })).statusCode, 404)
})

t.test("a deleted user's journal is gone with them", async (t) => {
  const member = await signUp(app)
  await create(member)
  await create(member)
  t.equal(await rowsOf(member.id), 2)
  await app.db.deleteFrom('user').where('id', '=', member.id).execute()
  t.equal(await rowsOf(member.id), 0)
})

t.test('the list is served by the (user_id, created_at, id) index', async (t) => {
  const index = await sql<{
    indexdef: string
  }>`select indexdef from pg_indexes where indexname = 'journal_entry_user_created_idx'`.execute(app.db)
  t.match(index.rows[0]?.indexdef, /\(user_id, created_at DESC, id DESC\)/)
})
