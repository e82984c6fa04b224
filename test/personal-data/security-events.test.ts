// me.listSecurityEvents' REST twin, GET /api/v1/me/security-events: the signed-in user's own security
// activity from the audit trail, newest first by cursor; nobody else's, and nothing secret.
import t from 'tap'
import { buildTestApp, call, sessionCookieOf, signUp, signUpWithRole, WEB_ORIGIN } from '../helpers/app.js'
import { eachIsUnauthorized, eachIsValidationError } from '../helpers/expect.js'

const app = await buildTestApp()
const AGENT = 'Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0'
const URL = '/api/v1/me/security-events'

interface Item {
  id: string
  kind: string
  at: string
  ip: string | null
  userAgent: string | null
  byAdministrator: boolean
}

const list = async (cookie: string, query = '') => {
  const res = await call(app, 'GET', `${URL}${query}`, { cookie })
  if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`)
  return res.json() as { items: Item[]; nextCursor: string | null }
}
const signIn = (email: string, password: string) =>
  call(app, 'POST', '/api/auth/sign-in/email', { body: { email, password }, headers: { 'user-agent': AGENT } })

const alice = await signUp(app, { name: 'Alice Activity' })
const bob = await signUp(app, { name: 'Bob Bystander' })
const admin = await signUpWithRole(app, 'admin')
// Alice: a sign-in from a browser, a wrong password, a change of password; Bob: his own.
const aliceSignIn = await signIn(alice.email, alice.password)
await signIn(alice.email, 'not her password at all')
const changed = await call(app, 'POST', '/api/auth/change-password', {
  cookie: alice.cookie,
  body: { currentPassword: alice.password, newPassword: 'a new and better passphrase' },
})
if (changed.statusCode !== 200) throw new Error(changed.body)
await signIn(bob.email, bob.password)
await signIn(bob.email, 'not his password either')
// An administrator acts on Alice's account (and reads her record: not a security event).
await call(app, 'POST', `/api/v1/admin/users/${alice.id}/ban`, { cookie: admin.cookie, body: { reason: 'Test' } })
await call(app, 'POST', `/api/v1/admin/users/${alice.id}/unban`, { cookie: admin.cookie, body: {} })
await call(app, 'GET', `/api/v1/admin/users/${alice.id}`, { cookie: admin.cookie })
const aliceCookie = sessionCookieOf(await signIn(alice.email, 'a new and better passphrase'))!

t.test("the list holds the user's own security events, newest first", async (t) => {
  const { items, nextCursor } = await list(aliceCookie, '?limit=100')
  t.equal(nextCursor, null)
  t.same(
    items.map((i) => i.kind),
    [
      'sign_in',
      'unbanned',
      'banned',
      'password_changed',
      'sign_in_failed',
      'sign_in',
      'sign_in', // sign-up's
      'account_created',
    ],
  )
  const times = items.map((i) => Date.parse(i.at))
  t.same(
    times,
    [...times].sort((a, b) => b - a),
    'newest first',
  )
  t.ok(times.every((ms) => Number.isFinite(ms)))
  const browserSignIn = items.find((i) => i.kind === 'sign_in')!
  t.match(
    browserSignIn,
    { ip: '127.0.0.1', userAgent: AGENT, method: 'email', byAdministrator: false },
    'a sign-in: browser, address, time, method',
  )
  t.equal(items.at(-2)!.userAgent, 'lightMyRequest', "sign-up's sign-in, with its browser")
  t.same(
    items.filter((i) => i.byAdministrator).map((i) => i.kind),
    ['unbanned', 'banned'],
    "an administrator's acts, the administrator not named",
  )
  t.ok(
    items.filter((i) => i.kind !== 'sign_in').every((i) => i.userAgent === null),
    'only sign-ins carry a browser',
  )
  t.equal(aliceSignIn.statusCode, 200)
})

t.test("nobody else's events, no other user's id, nothing secret", async (t) => {
  const res = await call(app, 'GET', `${URL}?limit=100`, { cookie: aliceCookie })
  const body = res.body
  for (const value of [
    bob.id,
    bob.email,
    admin.id,
    admin.email,
    'Test',
    'hash',
    'token',
    'secret',
    alice.password,
    'a new and better passphrase',
  ]) {
    t.notOk(body.includes(value), `no ${value}`)
  }
  const sessions = await app.db.selectFrom('session').select(['id', 'token_hash']).execute()
  for (const s of sessions) {
    t.notOk(body.includes(s.token_hash), 'no session token hash')
    t.notOk(body.includes(s.id), 'no session id')
  }
  const bobs = (await list(bob.cookie, '?limit=100')).items.map((i) => i.kind)
  t.same(bobs, ['sign_in_failed', 'sign_in', 'sign_in', 'account_created'], 'Bob sees his own only')
  const admins = (await list(admin.cookie, '?limit=100')).items.map((i) => i.kind)
  t.same(admins, ['sign_in', 'account_created'], "an administrator's acts on others are not in their own list")
})

t.test('pagination by cursor walks every event once', async (t) => {
  const all = (await list(aliceCookie, '?limit=100')).items.map((i) => i.id)
  const seen: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const page: { items: Item[]; nextCursor: string | null } = await list(
      aliceCookie,
      `?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    )
    t.ok(page.items.length <= 3)
    seen.push(...page.items.map((i) => i.id))
    cursor = page.nextCursor
    pages++
  } while (cursor && pages < 10)
  t.equal(pages, Math.ceil(all.length / 3))
  t.same(seen, all, 'the same events in the same order, none twice')
  t.equal((await list(aliceCookie)).items.length, Math.min(20, all.length), 'the default page is 20')
})

t.test('without a session: 401', async (t) => {
  await eachIsUnauthorized(t, app, [
    ['GET', URL],
    ['GET', `${URL}?limit=5`],
  ])
  const rpc = await app.inject({ method: 'GET', url: '/api/v1/me/listSecurityEvents', headers: { origin: WEB_ORIGIN } })
  t.equal(rpc.statusCode, 401, 'the procedure too')
})

t.test('unknown keys and bad values: 400', async (t) => {
  await eachIsValidationError(t, ['?userId=x', '?limit=0', '?limit=101', '?limit=abc', '?cursor=garbage', '?role=owner'], (q) =>
    call(app, 'GET', `${URL}${q}`, { cookie: aliceCookie }),
  )
})
