import t from 'tap'
import { EXAMPLE_PROFILE } from '../../src/profile/schemas.js'
import { buildTestApp, call, signUp, WEB_ORIGIN, type TestUser } from '../helpers/app.js'
import { auditEvents } from '../helpers/expect.js'

// A mutable clock: "today" (the latest birth date) and updatedAt come from it.
let fakeNow: Date | undefined
const app = await buildTestApp({ deps: { clock: { now: () => fakeNow ?? new Date() } } })
t.afterEach(() => {
  fakeNow = undefined
})

const getProfile = (user: TestUser) => call(app, 'GET', '/api/v1/profile', { cookie: user.cookie })
const update = (user: TestUser, body: unknown) => call(app, 'PATCH', '/api/v1/profile', { cookie: user.cookie, body })

/** The user's row as the database holds it, including the columns the API never changes. */
const rowOf = (id: string) => app.db.selectFrom('user').selectAll().where('id', '=', id).executeTakeFirstOrThrow()

// Every field set: the OpenAPI document's example profile, which therefore must be one the API accepts.
const FULL = { ...EXAMPLE_PROFILE, image: 'https://cdn.example.id/avatars/sari.png' }
// Every nullable field, empty: a new user's profile, and what null clears.
const CLEARED = {
  image: null,
  birthDate: null,
  birthTime: null,
  birthPlace: null,
  gender: null,
  locale: null,
  timezone: null,
}

t.test('both routes need a session', async (t) => {
  const get = await app.inject({ method: 'GET', url: '/api/v1/profile' })
  t.equal(get.statusCode, 401)
  t.match(get.json(), { code: 'UNAUTHORIZED', status: 401 })
  const post = await call(app, 'PATCH', '/api/v1/profile', { body: { name: 'Nobody' } })
  t.equal(post.statusCode, 401)
  t.match(post.json(), { code: 'UNAUTHORIZED' })
  const forged = await call(app, 'GET', '/api/v1/profile', { cookie: 'better-auth.session_token=forged.value' })
  t.equal(forged.statusCode, 401)
})

t.test('a new member has a profile with the sign-up name and empty birth data', async (t) => {
  const user = await signUp(app, { name: 'Bima' })
  const res = await getProfile(user)
  t.equal(res.statusCode, 200)
  t.same(res.json(), {
    id: user.id,
    email: user.email,
    name: 'Bima',
    ...CLEARED,
    createdAt: res.json().createdAt,
    updatedAt: res.json().updatedAt,
  })
  t.match(res.json().createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
})

t.test('a full update is stored, returned and read back, with updatedAt bumped', async (t) => {
  const user = await signUp(app)
  const before = (await getProfile(user)).json()
  fakeNow = new Date(Date.now() + 60_000)
  const res = await update(user, FULL)
  t.equal(res.statusCode, 200)
  const expected = { ...FULL, id: user.id, email: user.email, createdAt: before.createdAt, updatedAt: fakeNow.toISOString() }
  t.same(res.json(), expected)
  t.same((await getProfile(user)).json(), expected)
  const row = await rowOf(user.id)
  t.equal(row.birth_date, '1994-08-17')
  t.same(row.birth_place, FULL.birthPlace, 'birthPlace is stored as a jsonb object')
})

t.test('a partial update changes only the given fields', async (t) => {
  const user = await signUp(app)
  t.equal((await update(user, FULL)).statusCode, 200)
  const res = await update(user, { birthTime: '21:05' })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { ...FULL, birthTime: '21:05' })
})

t.test('null clears every nullable field', async (t) => {
  const user = await signUp(app)
  t.equal((await update(user, FULL)).statusCode, 200)
  const res = await update(user, CLEARED)
  t.equal(res.statusCode, 200)
  t.match(res.json(), { name: FULL.name, ...CLEARED })
  const row = await rowOf(user.id)
  t.equal(row.birth_place, null, 'a cleared birthPlace is SQL null, not a jsonb null')
})

t.test('an empty update changes nothing and returns the profile', async (t) => {
  const user = await signUp(app)
  const before = (await getProfile(user)).json()
  fakeNow = new Date(Date.now() + 60_000)
  const res = await update(user, {})
  t.equal(res.statusCode, 200)
  t.same(res.json(), before, 'updatedAt stays: nothing was updated')
})

t.test('strings are stored trimmed; locale and time zone in their canonical spelling', async (t) => {
  const user = await signUp(app)
  const res = await update(user, {
    name: '  Sari  ',
    image: ' https://cdn.example.id/a.png ',
    birthDate: ' 1994-08-17 ',
    birthTime: ' 06:30 ',
    birthPlace: { name: '\tYogyakarta  ', latitude: 0, longitude: 0 },
    locale: ' en-us ',
    timezone: ' asia/jakarta ',
  })
  t.equal(res.statusCode, 200)
  const stored = await rowOf(user.id)
  t.equal(stored.name, 'Sari')
  t.equal(stored.image, 'https://cdn.example.id/a.png')
  t.equal(stored.birth_date, '1994-08-17')
  t.equal(stored.birth_time, '06:30')
  t.same(stored.birth_place, { name: 'Yogyakarta', latitude: 0, longitude: 0 })
  t.equal(stored.locale, 'en-US')
  t.equal(stored.timezone, 'Asia/Jakarta')
  t.match(res.json(), { name: 'Sari', locale: 'en-US', timezone: 'Asia/Jakarta' })
})

t.test('values at the edges of every rule are accepted', async (t) => {
  fakeNow = new Date('2026-03-14T23:59:59.999Z')
  const user = await signUp(app)
  const accepted: [string, unknown][] = [
    ['name', 'x'.repeat(100)],
    ['name', 'É'],
    ['birthDate', '1900-01-01'],
    ['birthDate', '2026-03-14'], // today, by the injected clock
    ['birthDate', '2024-02-29'],
    ['birthTime', '00:00'],
    ['birthTime', '23:59'],
    ['birthPlace', { name: 'p'.repeat(200), latitude: 90, longitude: 180 }],
    ['birthPlace', { name: 'South Pole', latitude: -90, longitude: -180 }],
    ['image', `https://cdn.example.id/${'a'.repeat(2048 - 'https://cdn.example.id/'.length)}`],
    ['timezone', 'UTC'],
    ['timezone', 'America/Argentina/Buenos_Aires'],
    ['timezone', 'Asia/Calcutta'], // a backward-compatible IANA link
    ['timezone', 'Etc/GMT+7'],
    ['locale', 'id'],
    ['locale', 'en-US'],
    ['locale', 'zh-Hant-TW'],
    ['gender', 'male'],
    ['gender', 'female'],
    ['gender', 'other'],
  ]
  for (const [field, value] of accepted) {
    const res = await update(user, { [field]: value })
    t.equal(res.statusCode, 200, `${field} = ${JSON.stringify(value).slice(0, 40)} is accepted`)
    t.same(res.json()[field], value, `${field} is stored as given`)
  }
})

t.test('every invalid value is a 400 VALIDATION_ERROR naming the field, and changes nothing', async (t) => {
  fakeNow = new Date('2026-03-14T12:00:00Z')
  const user = await signUp(app)
  t.equal((await update(user, FULL)).statusCode, 200)
  const rowBefore = await rowOf(user.id)

  // [field, value, the issue's path when it is not body.<field>]
  const refused: Array<[string, unknown, string?]> = [
    // birthDate: a real calendar date, 1900-01-01..today
    ['birthDate', '2023-02-29'],
    ['birthDate', '2024-02-30'],
    ['birthDate', '2025-04-31'],
    ['birthDate', '2024-13-01'],
    ['birthDate', '1899-12-31'],
    ['birthDate', '2026-03-15'], // tomorrow, by the injected clock
    ['birthDate', '2999-01-01'],
    ['birthDate', '1994-8-17'],
    ['birthDate', '17-08-1994'],
    ['birthDate', '1994-08-17T00:00:00Z'],
    ['birthDate', 19940817],
    // birthTime: HH:MM 00:00..23:59
    ['birthTime', '24:00'],
    ['birthTime', '23:60'],
    ['birthTime', '7:30'],
    ['birthTime', '07:30:00'],
    ['birthTime', 'noon'],
    // timezone: a real IANA zone
    ['timezone', 'Mars/Olympus'],
    ['timezone', '+07:00'],
    ['timezone', 'GMT+7'],
    ['timezone', ''],
    ['timezone', `Asia/${'x'.repeat(70)}`],
    // birthPlace: name 1..200, latitude -90..90, longitude -180..180, nothing else
    ['birthPlace', { name: 'Nowhere', latitude: 91, longitude: 0 }, 'body.birthPlace.latitude'],
    ['birthPlace', { name: 'Nowhere', latitude: -90.0001, longitude: 0 }, 'body.birthPlace.latitude'],
    ['birthPlace', { name: 'Nowhere', latitude: 0, longitude: 180.5 }, 'body.birthPlace.longitude'],
    ['birthPlace', { name: 'Nowhere', latitude: 0, longitude: -181 }, 'body.birthPlace.longitude'],
    ['birthPlace', { name: 'Nowhere', latitude: '10', longitude: 0 }, 'body.birthPlace.latitude'],
    ['birthPlace', { latitude: 0, longitude: 0 }, 'body.birthPlace.name'],
    ['birthPlace', { name: '   ', latitude: 0, longitude: 0 }, 'body.birthPlace.name'],
    ['birthPlace', { name: 'p'.repeat(201), latitude: 0, longitude: 0 }, 'body.birthPlace.name'],
    ['birthPlace', { name: 'Yogya', latitude: 0, longitude: 0, elevation: 100 }],
    ['birthPlace', 'Yogyakarta'],
    // image: an https URL to a named host, at most 2048 characters
    ['image', 'http://cdn.example.id/a.png'],
    ['image', 'ftp://cdn.example.id/a.png'],
    ['image', 'javascript:alert(1)'],
    ['image', 'data:image/png;base64,AAAA'],
    ['image', 'not a url'],
    ['image', 'https://localhost/a.png'],
    ['image', `https://cdn.example.id/${'a'.repeat(2048)}`],
    // name: trimmed, 1..100, not nullable, no control characters, storable
    ['name', ''],
    ['name', '    '],
    ['name', 'x'.repeat(101)],
    ['name', null],
    ['name', 'Sa\u0000ri'],
    ['name', 'Sa\tri'],
    // A lone surrogate cannot be stored: refused, never silently rewritten to U+FFFD.
    ['name', 'A\ud800B'],
    ['name', 'A\udc00'],
    ['birthPlace', { name: 'Yogya\ud800', latitude: 0, longitude: 0 }, 'body.birthPlace.name'],
    ['name', 42],
    // locale: a BCP-47 tag, at most 35
    ['locale', 'en_US'],
    ['locale', 'english'],
    ['locale', 'x-private'],
    ['locale', `en-${'abcdefgh-'.repeat(4)}x`],
    // gender: one of three, or null
    ['gender', 'unknown'],
    ['gender', ''],
  ]
  for (const [field, value, path = `body.${field}`] of refused) {
    const res = await update(user, { [field]: value })
    const label = `${field} = ${JSON.stringify(value)?.slice(0, 50)}`
    t.equal(res.statusCode, 400, `${label} is refused`)
    const body = res.json()
    t.equal(body.code, 'VALIDATION_ERROR', label)
    t.ok(
      body.data?.issues?.some((i: { path: string }) => i.path === path),
      `${label} names ${path}: ${JSON.stringify(body.data?.issues)}`,
    )
  }
  t.same(await rowOf(user.id), rowBefore, 'no refused update changed anything')
})

t.test('email, role, plan and unknown keys are refused, and nothing is changed', async (t) => {
  const user = await signUp(app)
  const rowBefore = await rowOf(user.id)
  const attempts: Record<string, unknown>[] = [
    { email: 'someone-else@example.com' },
    { role: 'admin' },
    { role: 'owner' },
    { plan: 'premium_plus' },
    { planExpiresAt: '2099-01-01T00:00:00Z' },
    { emailVerified: true },
    { id: 'another-id' },
    { userId: 'another-id' },
    { createdAt: '2000-01-01T00:00:00Z' },
    { favouriteColour: 'blue' },
    // A valid field does not smuggle an invalid one through.
    { name: 'Changed', role: 'admin' },
    { name: 'Changed', plan: 'premium' },
  ]
  for (const body of attempts) {
    const res = await update(user, body)
    t.equal(res.statusCode, 400, `${JSON.stringify(body)} is refused`)
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }
  for (const payload of ['[]', '"a string"', '42', 'null']) {
    const res = await app.inject({
      method: 'PATCH',
      url: '/api/v1/profile',
      headers: { cookie: user.cookie, origin: WEB_ORIGIN, 'content-type': 'application/json' },
      payload,
    })
    t.equal(res.statusCode, 400, `a body of ${payload} is refused`)
  }
  const rowAfter = await rowOf(user.id)
  t.same(rowAfter, rowBefore, 'name, role, plan, email and updatedAt are unchanged')
  t.equal(rowAfter.role, 'member')
  t.equal(rowAfter.plan, 'free')
})

t.test("a member cannot read or change another member's profile", async (t) => {
  const alice = await signUp(app, { name: 'Alice' })
  const bob = await signUp(app, { name: 'Bob' })
  t.equal((await update(bob, { ...FULL, name: 'Bob' })).statusCode, 200)
  const bobBefore = await rowOf(bob.id)

  // The routes take no id: an id in the query is an unknown key, and Alice only ever reads her own row.
  const read = await call(app, 'GET', `/api/v1/profile?id=${bob.id}&userId=${bob.id}`, { cookie: alice.cookie })
  t.equal(read.statusCode, 400)
  t.equal(read.json().code, 'VALIDATION_ERROR')
  t.notMatch(read.body, bob.email)
  const own = await call(app, 'GET', '/api/v1/profile', { cookie: alice.cookie })
  t.equal(own.json().id, alice.id)
  t.equal(own.json().name, 'Alice')

  const smuggled = await update(alice, { id: bob.id, name: 'Mallory' })
  t.equal(smuggled.statusCode, 400)
  const viaQuery = await call(app, 'PATCH', `/api/v1/profile?userId=${bob.id}`, {
    cookie: alice.cookie,
    body: { name: 'Mallory', birthDate: '2000-01-01' },
  })
  t.equal(viaQuery.statusCode, 200)
  t.equal(viaQuery.json().id, alice.id)

  t.same(await rowOf(bob.id), bobBefore, "Bob's row is untouched")
  t.equal((await rowOf(alice.id)).name, 'Mallory')
  t.match((await getProfile(bob)).json(), { id: bob.id, name: 'Bob', birthDate: FULL.birthDate })
})

t.test('an update is audited with the field names only, never the personal values', async (t) => {
  const user = await signUp(app)
  t.equal((await update(user, { birthDate: '1994-08-17', birthPlace: FULL.birthPlace })).statusCode, 200)
  const events = await auditEvents(app.db, { action: 'profile.updated', actorId: user.id })
  t.equal(events.length, 1)
  t.same(events[0]!.details, { fields: ['birthDate', 'birthPlace'] })
  t.notMatch(JSON.stringify(events[0]!.details), /1994|Yogyakarta/)
})

t.test('a cross-site update is refused by the origin check', async (t) => {
  const user = await signUp(app)
  const res = await app.inject({
    method: 'PATCH',
    url: '/api/v1/profile',
    headers: { cookie: user.cookie, origin: 'https://evil.example' },
    payload: { name: 'Evil' },
  })
  t.equal(res.statusCode, 403)
  t.equal((await rowOf(user.id)).name, 'Test User')
})

t.test('the OpenAPI document describes both routes with schemas and examples', async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json()
  const get = doc.paths['/api/v1/profile'].get
  t.equal(get.operationId, 'getProfile')
  t.equal(get.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/Profile')
  t.ok(doc.components.schemas.Profile.examples?.length, 'the Profile schema has an example')
  const post = doc.paths['/api/v1/profile'].patch
  t.equal(post.operationId, 'updateProfile')
  const body = post.requestBody.content['application/json']
  t.equal(body.schema.additionalProperties, false)
  t.ok(body.examples || body.example, 'the request body has examples')
  t.ok(post.responses['400'] && post.responses['401'])
})
