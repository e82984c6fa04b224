import { sql } from 'kysely'
import t from 'tap'
import { buildTestApp, call, sessionCookieOf, signUp, uniqueEmail } from '../helpers/app.js'

const app = await buildTestApp()

const consentRows = (userId: string) =>
  app.db.selectFrom('consent_record').selectAll().where('user_id', '=', userId).orderBy('created_at').execute()

t.test('recording a consent answers 201 and keeps ip and user agent', async (t) => {
  const user = await signUp(app)
  const res = await call(app, 'POST', '/api/v1/consent', {
    cookie: user.cookie,
    body: { type: 'marketing', version: '2026-01', granted: true },
    headers: { 'user-agent': 'ConsentTest/1.0' },
  })
  t.equal(res.statusCode, 201)
  const body = res.json()
  t.match(body, { id: String, type: 'marketing', version: '2026-01', granted: true, createdAt: String })
  t.same(Object.keys(body).sort(), ['createdAt', 'granted', 'id', 'type', 'version'])
  const [row] = await consentRows(user.id)
  t.match(row, { id: body.id, type: 'marketing', granted: true, ip: '127.0.0.1', user_agent: 'ConsentTest/1.0' })
})

t.test('consents are append-only: the history keeps every decision, current shows the latest per type', async (t) => {
  const user = await signUp(app)
  const decisions = [
    { type: 'terms', version: '1', granted: true },
    { type: 'marketing', version: '1', granted: true },
    { type: 'marketing', version: '1', granted: false },
    { type: 'terms', version: '2', granted: true },
    { type: 'ai_processing', version: '1', granted: false },
  ]
  const ids: string[] = []
  for (const body of decisions) ids.push((await call(app, 'POST', '/api/v1/consent', { cookie: user.cookie, body })).json().id)

  const res = await call(app, 'GET', '/api/v1/consent', { cookie: user.cookie })
  t.equal(res.statusCode, 200)
  const { current, history } = res.json()
  t.same(
    history.map((h: { id: string }) => h.id),
    [...ids].reverse(),
    'newest first, nothing overwritten',
  )
  t.same(Object.keys(current).sort(), ['ai_processing', 'marketing', 'terms'])
  t.match(current.terms, { granted: true, version: '2', at: history[1].createdAt })
  t.match(current.marketing, { granted: false, version: '1', at: history[2].createdAt })
  t.match(current.ai_processing, { granted: false, version: '1' })
  t.equal((await consentRows(user.id)).length, 5)
})

t.test(
  'decisions of one instant keep the order they were recorded in: a withdrawal right after a grant is in force',
  async (t) => {
    // The embedded database's clock counts milliseconds: two requests in a row can share created_at.
    const user = await signUp(app)
    const ids: string[] = []
    for (const granted of [true, false, true, false, true, false]) {
      const body = { type: 'marketing', version: '1', granted }
      ids.push((await call(app, 'POST', '/api/v1/consent', { cookie: user.cookie, body })).json().id)
    }
    await sql`update consent_record set created_at = '2026-01-01T00:00:00Z' where user_id = ${user.id}`.execute(app.db)
    const { current, history } = (await call(app, 'GET', '/api/v1/consent', { cookie: user.cookie })).json()
    t.same(
      history.map((h: { id: string }) => h.id),
      [...ids].reverse(),
      'newest first',
    )
    t.match(current.marketing, { granted: false, version: '1' }, 'the last decision is in force')
  },
)

t.test('a member sees only their own consents', async (t) => {
  const a = await signUp(app)
  const b = await signUp(app)
  await call(app, 'POST', '/api/v1/consent', { cookie: a.cookie, body: { type: 'analytics', version: 'a', granted: true } })
  const res = await call(app, 'GET', '/api/v1/consent', { cookie: b.cookie })
  t.same(res.json(), { current: {}, history: [] })
})

t.test('consent records cannot be changed or removed through the API', async (t) => {
  const user = await signUp(app)
  for (const method of ['PUT', 'PATCH', 'DELETE'] as const) {
    const res = await call(app, method, '/api/v1/consent', {
      cookie: user.cookie,
      body: { type: 'terms', version: '1', granted: false },
    })
    t.equal(res.statusCode, 404, method)
  }
})

t.test('invalid consents are refused and nothing is written', async (t) => {
  const user = await signUp(app)
  const bodies: unknown[] = [
    {},
    { type: 'cookies', version: '1', granted: true },
    { type: 'terms', version: '', granted: true },
    { type: 'terms', version: '   ', granted: true },
    { type: 'terms', version: 'v'.repeat(65), granted: true },
    { type: 'terms', version: 'v1\u0000', granted: true },
    { type: 'terms', version: 'v\ud800', granted: true },
    { type: 'terms', version: '1', granted: 'yes' },
    { type: 'terms', version: '1' },
    { type: 'terms', version: '1', granted: true, userId: 'someone-else' },
    [{ type: 'terms', version: '1', granted: true }],
  ]
  for (const body of bodies) {
    const res = await call(app, 'POST', '/api/v1/consent', { cookie: user.cookie, body })
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }
  t.equal((await consentRows(user.id)).length, 0)
})

t.test('sign-up may carry initial consents, recorded with the account', async (t) => {
  const email = uniqueEmail('consent')
  const res = await call(app, 'POST', '/api/auth/sign-up/email', {
    body: {
      name: 'Sari',
      email,
      password: 'correct horse battery staple',
      consents: [
        { type: 'terms', version: '2026-01', granted: true },
        { type: 'privacy', version: '2026-01', granted: true },
        { type: 'marketing', version: '2026-01', granted: false },
      ],
    },
    headers: { 'user-agent': 'SignUpBrowser/2' },
  })
  t.equal(res.statusCode, 200, res.body)
  const userId = res.json().user.id
  const rows = await consentRows(userId)
  t.same(rows.map((r) => [r.type, r.granted]).sort(), [
    ['marketing', false],
    ['privacy', true],
    ['terms', true],
  ])
  t.ok(rows.every((r) => r.ip === '127.0.0.1' && r.user_agent === 'SignUpBrowser/2' && r.version === '2026-01'))

  const current = (await call(app, 'GET', '/api/v1/consent', { cookie: sessionCookieOf(res) })).json().current
  t.same(Object.keys(current).sort(), ['marketing', 'privacy', 'terms'])
})

t.test('a sign-up with invalid consents creates no account', async (t) => {
  const valid = { type: 'terms', version: '1', granted: true }
  const cases: unknown[] = [
    [valid, { ...valid, granted: false }], // the same type twice
    [
      valid,
      { type: 'privacy', version: '1', granted: true },
      { type: 'marketing', version: '1', granted: true },
      { type: 'analytics', version: '1', granted: true },
      { type: 'ai_processing', version: '1', granted: true },
      { type: 'terms', version: '2', granted: true },
    ], // six
    [{ type: 'spam', version: '1', granted: true }],
    [{ ...valid, ip: '1.2.3.4' }],
    'terms',
  ]
  for (const consents of cases) {
    const email = uniqueEmail('badconsent')
    const res = await call(app, 'POST', '/api/auth/sign-up/email', {
      body: { name: 'X', email, password: 'correct horse battery staple', consents },
    })
    t.equal(res.statusCode, 400, JSON.stringify(consents))
    t.equal(res.json().code, 'VALIDATION_ERROR')
    t.notOk(await app.db.selectFrom('user').select('id').where('email', '=', email).executeTakeFirst())
  }
})

t.test('a sign-up without consents records none', async (t) => {
  const user = await signUp(app)
  t.equal((await consentRows(user.id)).length, 0)
})
