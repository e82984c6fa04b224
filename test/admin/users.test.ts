import t from 'tap'
import { buildTestApp, call, signUp, signUpWithRole, uniqueEmail, type TestUser } from '../helpers/app.js'
import { auditEvents, eachIsValidationError } from '../helpers/expect.js'

const app = await buildTestApp()
const admin = await signUpWithRole(app, 'admin')
const owner = await signUpWithRole(app, 'owner')

const list = (query: string, who: TestUser = admin) => call(app, 'GET', `/api/v1/admin/users?${query}`, { cookie: who.cookie })

/** Pages through listUsers and returns every id, in order. */
async function allPages(query: string, limit: number): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const res = await list(`${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`)
    if (res.statusCode !== 200) throw new Error(res.body)
    const body = res.json()
    t.ok(body.items.length <= limit)
    ids.push(...body.items.map((u: { id: string }) => u.id))
    cursor = body.nextCursor
    pages++
  } while (cursor && pages < 50)
  return { ids, pages }
}

t.test('listUsers finds by exact email, case-insensitively', async (t) => {
  const target = await signUp(app, { email: uniqueEmail('exact') })
  await signUp(app, { email: `x${target.email}` }) // contains the address, but is not it
  const res = await list(`email=${encodeURIComponent(target.email.toUpperCase())}`)
  t.equal(res.statusCode, 200)
  t.same(
    res.json().items.map((u: { id: string }) => u.id),
    [target.id],
  )
  t.equal(res.json().nextCursor, null)
  t.same((await list('email=nobody%40example.com')).json().items, [])
})

t.test('listUsers searches text in email or name, wildcards taken literally', async (t) => {
  const marker = `mk${Date.now()}`
  const byName = await signUp(app, { name: `Sari ${marker.toUpperCase()} Dewi` })
  const byEmail = await signUp(app, { email: uniqueEmail(marker) })
  const percent = await signUp(app, { name: `${marker} 100% sure` })
  const underscore = await signUp(app, { name: `${marker} snake_case` })

  const found = (await list(`q=${marker}&limit=100`))
    .json()
    .items.map((u: { id: string }) => u.id)
    .sort()
  t.same(found, [byName.id, byEmail.id, percent.id, underscore.id].sort())
  t.same(
    (await list(`q=${encodeURIComponent('%')}&limit=100`)).json().items.map((u: { id: string }) => u.id),
    [percent.id],
  )
  t.same(
    (await list(`q=_&limit=100`)).json().items.map((u: { id: string }) => u.id),
    [underscore.id],
  )
  t.same((await list(`q=${encodeURIComponent('\\')}`)).json().items, [])
})

t.test('listUsers filters by role and by plan', async (t) => {
  const premium = await signUp(app)
  await app.db.updateTable('user').set({ plan: 'premium' }).where('id', '=', premium.id).execute()

  const admins = (await list('role=admin&limit=100')).json().items
  t.ok(admins.length >= 1 && admins.every((u: { role: string }) => u.role === 'admin'))
  t.ok(admins.some((u: { id: string }) => u.id === admin.id))
  const owners = (await list('role=owner&limit=100')).json().items.map((u: { id: string }) => u.id)
  t.same(owners, [owner.id])

  const dbPremium = await app.db.selectFrom('user').select('id').where('plan', '=', 'premium').execute()
  const premiums = (await list('plan=premium&limit=100')).json().items
  t.same(premiums.map((u: { id: string }) => u.id).sort(), dbPremium.map((r) => r.id).sort())
  t.ok(premiums.some((u: { id: string }) => u.id === premium.id))

  const both = (await list('plan=premium&role=owner')).json().items
  t.same(both, [])
})

t.test('listUsers pages newest first without gaps or repeats, stable under inserts', async (t) => {
  const marker = `page${Date.now()}`
  const seeded: string[] = []
  for (let i = 0; i < 5; i++) seeded.push((await signUp(app, { name: `${marker} ${i}` })).id)
  const expected = (
    await app.db
      .selectFrom('user')
      .select('id')
      .where('name', 'like', `${marker}%`)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute()
  ).map((r) => r.id)
  t.same([...expected].sort(), [...seeded].sort())
  t.same(expected, [...seeded].reverse(), 'newest first')

  const first = (await list(`q=${marker}&limit=2`)).json()
  t.equal(first.items.length, 2)
  await signUp(app, { name: `${marker} late` }) // arrives between two page requests
  const rest: string[] = []
  let cursor: string | null = first.nextCursor
  while (cursor) {
    const body = (await list(`q=${marker}&limit=2&cursor=${cursor}`)).json()
    rest.push(...body.items.map((u: { id: string }) => u.id))
    cursor = body.nextCursor
  }
  t.same([...first.items.map((u: { id: string }) => u.id), ...rest], expected)
})

t.test('listUsers pages correctly through users created within the same millisecond', async (t) => {
  const marker = `tie${Date.now()}`
  // Microsecond timestamps: a cursor that kept only milliseconds would lose or repeat rows here.
  const stamps = [
    '2020-01-01T00:00:00.000100Z',
    '2020-01-01T00:00:00.000200Z',
    '2020-01-01T00:00:00.000200Z',
    '2020-01-01T00:00:00.000900Z',
  ]
  const ids = stamps.map((_, i) => `${marker}-${i}`)
  await app.db
    .insertInto('user')
    .values(stamps.map((at, i) => ({ id: ids[i]!, name: marker, email: `${marker}-${i}@example.com`, created_at: at })))
    .execute()
  const { ids: paged } = await allPages(`q=${marker}`, 1)
  t.same(paged, [ids[3], ids[2], ids[1], ids[0]])
})

t.test('listUsers validates its query', async (t) => {
  const badValues: Record<string, string[]> = {
    limit: ['0', '101', 'abc'],
    role: ['root'],
    plan: ['gold'],
    cursor: ['not-a-cursor', Buffer.from('["2020-01-01",1]').toString('base64url')],
    sort: ['email'],
    q: ['a'.repeat(101)],
  }
  const badQueries = Object.entries(badValues).flatMap(([name, values]) => values.map((value) => `${name}=${value}`))
  await eachIsValidationError(t, badQueries, (query) => list(query))
})

t.test('getUser returns the user with counts of their records only', async (t) => {
  const target = await signUp(app)
  const other = await signUp(app)
  await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: target.email, password: target.password } })
  await app.db
    .insertInto('session')
    .values({
      id: `expired-${Date.now()}`,
      token_hash: `expired-${Date.now()}`,
      user_id: target.id,
      expires_at: new Date(Date.now() - 1000),
    })
    .execute()
  for (const user of [target, target, other]) {
    const res = await call(app, 'POST', '/api/v1/journal/entries', {
      cookie: user.cookie,
      body: { content: 'A quiet day', mood: 4 },
    })
    t.equal(res.statusCode, 201, res.body)
  }
  for (const user of [target, other, other]) {
    const res = await call(app, 'POST', '/api/v1/compatibility/results', {
      cookie: user.cookie,
      body: { partner: { name: 'Bima', birthDate: '1992-11-09' }, systems: ['bazi'], score: 71, summary: {} },
    })
    t.equal(res.statusCode, 201, res.body)
  }
  for (const [user, status] of [
    [target, 'paid'],
    [target, 'pending'],
    [other, 'paid'],
  ] as const) {
    await app.db
      .insertInto('payment')
      .values({
        id: `pay-${Math.random()}`,
        user_id: user.id,
        product: 'premium_month',
        amount: 79000,
        status,
        provider: 'sandbox',
        return_url: '/done',
        expires_at: new Date(Date.now() + 3_600_000),
      })
      .execute()
  }

  const res = await call(app, 'GET', `/api/v1/admin/users/${target.id}`, { cookie: owner.cookie })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.match(body, { id: target.id, email: target.email, role: 'member', plan: 'free' })
  t.same(body.counts, { sessions: 2, entries: 2, results: 1, payments: 2 })
  t.notOk('passwordHash' in body)

  const viewed = await auditEvents(app.db, { action: 'admin.user.viewed', targetId: target.id })
  t.equal(viewed.length, 1, 'the moderation read is audited')
  t.equal(viewed[0]!.actor_id, owner.id)
})

t.test('listAuditEvents filters by actor, target and action and pages newest first', async (t) => {
  const target = await signUp(app)
  for (const plan of ['premium', 'premium_plus', 'free'] as const) {
    await call(app, 'POST', `/api/v1/admin/users/${target.id}/plan`, { cookie: admin.cookie, body: { plan } })
  }
  await call(app, 'POST', `/api/v1/admin/users/${target.id}/revoke-sessions`, { cookie: owner.cookie, body: {} })

  const byTarget = (
    await call(app, 'GET', `/api/v1/admin/audit?targetId=${target.id}&limit=100`, { cookie: admin.cookie })
  ).json()
  const actions = byTarget.items.map((e: { action: string }) => e.action)
  t.same(actions.slice(0, 4), [
    'admin.user.sessions_revoked',
    'admin.user.plan_changed',
    'admin.user.plan_changed',
    'admin.user.plan_changed',
  ])
  t.ok(actions.includes('auth.sign_up'))
  t.match(byTarget.items[0], {
    id: String,
    at: String,
    actorId: owner.id,
    targetType: 'user',
    targetId: target.id,
    ip: '127.0.0.1',
    details: { revoked: 1, before: { sessions: 1 }, after: { sessions: 0 } },
  })
  t.match(byTarget.items[1].details, { before: { plan: 'premium_plus' }, after: { plan: 'free' } })

  const filtered = (
    await call(app, 'GET', `/api/v1/admin/audit?targetId=${target.id}&actorId=${admin.id}&action=admin.user.plan_changed`, {
      cookie: owner.cookie,
    })
  ).json()
  t.equal(filtered.items.length, 3)
  t.ok(
    filtered.items.every(
      (e: { actorId: string; action: string }) => e.actorId === admin.id && e.action === 'admin.user.plan_changed',
    ),
  )

  const pages: string[] = []
  let cursor: string | null = null
  do {
    const res = await call(app, 'GET', `/api/v1/admin/audit?targetId=${target.id}&limit=2${cursor ? `&cursor=${cursor}` : ''}`, {
      cookie: admin.cookie,
    })
    pages.push(...res.json().items.map((e: { id: string }) => e.id))
    cursor = res.json().nextCursor
  } while (cursor)
  t.same(
    pages,
    byTarget.items.map((e: { id: string }) => e.id),
  )

  const listed = await auditEvents(app.db, { action: 'admin.audit.listed', actorId: owner.id })
  t.ok(
    listed.some((e) => (e.details as { filters?: { action?: string } }).filters?.action === 'admin.user.plan_changed'),
    'reading the log is logged',
  )

  for (const query of ['limit=0', 'cursor=zzz', 'unknown=1', `action=${'a'.repeat(101)}`]) {
    const res = await call(app, 'GET', `/api/v1/admin/audit?${query}`, { cookie: admin.cookie })
    t.equal(res.statusCode, 400, query)
  }
})
