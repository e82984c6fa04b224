// Sessions and the cookie (docs/http-contract.md, "Sessions and cookies"): fixation, replay,
// forgery, key rotation, sliding renewal and expiry on the app's clock, rememberMe, and every
// cookie attribute in development and production.
import type { LightMyRequestResponse } from 'fastify'
import t from 'tap'
import { hashToken } from '../../src/auth/core/tokens.js'
import { buildTestApp, call, sessionCookieOf, signUp, TEST_SECRET } from '../helpers/app.js'

const app = await buildTestApp()
const DAY = 24 * 60 * 60 * 1000

const setCookies = (res: LightMyRequestResponse): string[] => {
  const header = res.headers['set-cookie']
  return Array.isArray(header) ? header : header ? [header] : []
}
const whoami = (cookie: string) => call(app, 'GET', '/api/v1/whoami', { cookie })
const getSession = (cookie: string) => call(app, 'GET', '/api/auth/get-session', { cookie })
const signIn = (body: Record<string, unknown>, cookie?: string) => call(app, 'POST', '/api/auth/sign-in/email', { body, cookie })
/** The token inside a `name=token.signature` cookie. */
const tokenOf = (cookie: string) => decodeURIComponent(cookie.split('=').slice(1).join('=')).split('.')[0]!

t.test('a new token at every sign-in, and the session of the cookie it came with ends', async (t) => {
  const user = await signUp(app)
  const res = await signIn({ email: user.email, password: user.password }, user.cookie)
  t.equal(res.statusCode, 200)
  const fresh = sessionCookieOf(res)!
  t.ok(fresh)
  t.not(tokenOf(fresh), tokenOf(user.cookie), 'the token is new')
  t.equal((await whoami(user.cookie)).statusCode, 401, 'the planted or previous cookie no longer works')
  t.equal((await whoami(fresh)).statusCode, 200)
  const again = sessionCookieOf(await signIn({ email: user.email, password: user.password }))!
  t.not(tokenOf(again), tokenOf(fresh), 'a sign-in without a cookie also gets its own token')
})

t.test('a signed-out cookie replayed is 401 on whoami and null on get-session', async (t) => {
  const user = await signUp(app)
  t.equal((await whoami(user.cookie)).statusCode, 200)
  const out = await call(app, 'POST', '/api/auth/sign-out', { cookie: user.cookie, body: {} })
  t.same(out.json(), { success: true })
  t.ok(
    setCookies(out).some((c) => /session_token=;/.test(c) && /Max-Age=0/i.test(c)),
    'the cookie is expired',
  )
  const replay = await whoami(user.cookie)
  t.equal(replay.statusCode, 401)
  t.match(replay.json(), { code: 'UNAUTHORIZED', status: 401 })
  const session = await getSession(user.cookie)
  t.equal(session.statusCode, 200)
  t.equal(session.json(), null)
  t.equal(session.headers['cache-control'], 'no-store')
})

t.test('sign-out without a session still succeeds', async (t) => {
  const res = await call(app, 'POST', '/api/auth/sign-out', { body: {} })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { success: true })
})

t.test('a revoked session is refused at the next request', async (t) => {
  const user = await signUp(app)
  const second = sessionCookieOf(await signIn({ email: user.email, password: user.password }))!
  const list = await call(app, 'GET', '/api/auth/list-sessions', { cookie: user.cookie })
  const other = list.json().find((s: { current: boolean }) => !s.current)
  t.equal((await call(app, 'POST', '/api/auth/revoke-session', { cookie: user.cookie, body: { id: other.id } })).statusCode, 200)
  t.equal((await whoami(second)).statusCode, 401)
  t.equal((await getSession(second)).json(), null)
})

t.test('two sessions of one user each get their own get-session answer, from memory too', async (t) => {
  const user = await signUp(app)
  const second = sessionCookieOf(await signIn({ email: user.email, password: user.password }))!
  const rows = await app.db.selectFrom('session').select(['id', 'token_hash']).where('user_id', '=', user.id).execute()
  const idOf = (cookie: string) => rows.find((r) => r.token_hash === hashToken(tokenOf(cookie)))!.id
  for (let round = 0; round < 3; round++) {
    t.equal((await getSession(user.cookie)).json().session.id, idOf(user.cookie))
    t.equal((await getSession(second)).json().session.id, idOf(second))
  }
})

t.test('a cookie with a forged signature is no session', async (t) => {
  const user = await signUp(app)
  const [name, value] = [user.cookie.split('=')[0]!, decodeURIComponent(user.cookie.split('=').slice(1).join('='))]
  const [token, signature] = value.split('.') as [string, string]
  const flipped = signature.startsWith('A') ? `B${signature.slice(1)}` : `A${signature.slice(1)}`
  // Verified once first: the cookie module remembers values that verified, and must not let a
  // near miss of one through.
  t.equal((await whoami(user.cookie)).statusCode, 200)
  for (const forged of [
    `${name}=${encodeURIComponent(`${token}.${flipped}`)}`,
    `${name}=${encodeURIComponent(token)}`, // the bare token, unsigned
    `${name}=${encodeURIComponent(`${token.slice(0, -1)}x.${signature}`)}`, // another token, old signature
  ]) {
    const res = await whoami(forged)
    t.equal(res.statusCode, 401)
    t.equal((await getSession(forged)).json(), null)
    t.ok(
      setCookies(res).some((c) => /session_token=;/.test(c)),
      'the browser is told to drop it',
    )
  }
  t.equal((await whoami(user.cookie)).statusCode, 200, 'the real cookie still works')
})

t.test('the database holds only a hash of the token and a public id', async (t) => {
  const user = await signUp(app)
  const token = tokenOf(user.cookie)
  const rows = await app.db.selectFrom('session').selectAll().where('user_id', '=', user.id).execute()
  t.equal(rows.length, 1)
  t.equal(rows[0]!.token_hash, hashToken(token))
  t.not(rows[0]!.id, token)
  const session = (await getSession(user.cookie)).json().session
  t.equal(session.id, rows[0]!.id, 'clients see the public id')
  t.notOk(JSON.stringify(session).includes(token))
})

t.test('key rotation: "new,old" accepts cookies signed by the old key and signs with the new', async (t) => {
  const oldKey = TEST_SECRET
  const newKey = 'a-brand-new-secret-that-is-long-enough-987654'
  const rotated = await buildTestApp({ env: { AUTH_SECRET: `${newKey},${oldKey}` } })
  const onlyNew = await buildTestApp({ env: { AUTH_SECRET: newKey } })
  const user = await signUp(app) // signed with the old key
  t.equal((await call(rotated, 'GET', '/api/v1/whoami', { cookie: user.cookie })).statusCode, 200)
  t.equal(
    (await call(onlyNew, 'GET', '/api/v1/whoami', { cookie: user.cookie })).statusCode,
    401,
    'a dropped key no longer verifies',
  )
  const res = await call(rotated, 'POST', '/api/auth/sign-in/email', { body: { email: user.email, password: user.password } })
  const signedNew = sessionCookieOf(res)!
  t.equal((await call(onlyNew, 'GET', '/api/v1/whoami', { cookie: signedNew })).statusCode, 200, 'the first key signs')
  t.equal((await whoami(signedNew)).statusCode, 401, 'the old-key-only instance cannot verify it')
})

t.test('sliding renewal: a session with less than half its life left is extended and its cookie re-set', async (t) => {
  const user = await signUp(app)
  const nearExpiry = new Date(Date.now() + DAY)
  await app.db.updateTable('session').set({ expires_at: nearExpiry }).where('user_id', '=', user.id).execute()
  const res = await getSession(user.cookie)
  t.equal(res.statusCode, 200)
  const cookie = setCookies(res).find((c) => /session_token=[^;]+/.test(c))
  t.ok(cookie, 'the cookie is sent again')
  t.equal(cookie!.split(';', 1)[0], user.cookie, 'the same token and signature, with a new lifetime')
  const maxAge = Number(/Max-Age=(\d+)/i.exec(cookie!)?.[1])
  t.ok(maxAge > 29 * 24 * 3600 && maxAge <= 30 * 24 * 3600, `Max-Age is the full lifetime again (${maxAge})`)
  const row = await app.db.selectFrom('session').select('expires_at').where('user_id', '=', user.id).executeTakeFirstOrThrow()
  t.ok(row.expires_at.getTime() > Date.now() + 29 * DAY, 'the server-side expiry moved forward')
  t.ok(new Date(res.json().session.expiresAt).getTime() > Date.now() + 29 * DAY)
  const calm = await getSession(user.cookie)
  t.notOk(
    setCookies(calm).some((c) => /session_token=[^;]+/.test(c)),
    'a fresh session is not re-set on every request',
  )
})

t.test('an expired session is no session', async (t) => {
  const user = await signUp(app)
  await app.db
    .updateTable('session')
    .set({ expires_at: new Date(Date.now() - 1000) })
    .where('user_id', '=', user.id)
    .execute()
  t.equal((await whoami(user.cookie)).statusCode, 401)
  t.equal((await getSession(user.cookie)).json(), null)
})

t.test('rememberMe false: a browser-session cookie and a one-day server session', async (t) => {
  const user = await signUp(app)
  const res = await signIn({ email: user.email, password: user.password, rememberMe: false })
  t.equal(res.statusCode, 200)
  const cookie = setCookies(res).find((c) => /session_token=[^;]+/.test(c))!
  t.notMatch(cookie, /Max-Age/i)
  t.notMatch(cookie, /Expires/i)
  const who = await whoami(sessionCookieOf(res)!)
  const expiresAt = new Date(who.json().sessionExpiresAt).getTime()
  t.ok(expiresAt <= Date.now() + DAY && expiresAt > Date.now() + DAY - 60_000, 'the server session lasts one day')
})

t.test('rememberMe true (the default): Max-Age equals the 30-day lifetime', async (t) => {
  const user = await signUp(app)
  const res = await signIn({ email: user.email, password: user.password })
  const cookie = setCookies(res).find((c) => /session_token=[^;]+/.test(c))!
  const maxAge = Number(/Max-Age=(\d+)/i.exec(cookie)?.[1])
  t.ok(maxAge > 30 * 24 * 3600 - 60 && maxAge <= 30 * 24 * 3600, `Max-Age ${maxAge}`)
})

t.test('development cookie: HttpOnly, SameSite=Lax, Path=/, no Secure, plain name', async (t) => {
  const res = await call(app, 'POST', '/api/auth/sign-up/email', {
    body: { name: 'Dev', email: `dev-${Date.now()}@example.com`, password: 'correct horse battery staple' },
  })
  const cookie = setCookies(res).find((c) => /session_token=[^;]+/.test(c))!
  t.match(cookie, /^better-auth\.session_token=/)
  t.match(cookie, /; HttpOnly/)
  t.match(cookie, /; SameSite=Lax/)
  t.match(cookie, /; Path=\//)
  t.notMatch(cookie, /Secure/)
  t.notMatch(cookie, /Domain=/)
})

t.test('production cookie: __Secure- name, Secure, HttpOnly, SameSite=Lax, Domain from AUTH_COOKIE_DOMAIN', async (t) => {
  const prod = await buildTestApp({
    env: {
      NODE_ENV: 'production',
      AUTH_URL: 'https://api.example.com',
      WEB_ORIGIN: 'https://app.example.com',
      AUTH_COOKIE_DOMAIN: '.example.com',
      PAYMENT_GATEWAY: '',
    },
  })
  const res = await prod.inject({
    method: 'POST',
    url: '/api/auth/sign-up/email',
    headers: { origin: 'https://app.example.com' },
    payload: { name: 'Prod', email: `prod-${Date.now()}@example.com`, password: 'correct horse battery staple' },
  })
  t.equal(res.statusCode, 200)
  const cookie = setCookies(res).find((c) => /session_token=[^;]+/.test(c))!
  t.match(cookie, /^__Secure-better-auth\.session_token=/)
  t.match(cookie, /; Secure/)
  t.match(cookie, /; HttpOnly/)
  t.match(cookie, /; SameSite=Lax/)
  t.match(cookie, /; Path=\//)
  t.match(cookie, /; Domain=\.example\.com/)
  t.match(cookie, /; Max-Age=\d+/)
  const who = await prod.inject({ method: 'GET', url: '/api/v1/whoami', headers: { cookie: cookie.split(';', 1)[0]! } })
  t.equal(who.statusCode, 200)
  const plainName = cookie.split(';', 1)[0]!.replace(/^__Secure-/, '')
  t.equal(
    (await prod.inject({ method: 'GET', url: '/api/v1/whoami', headers: { cookie: plainName } })).statusCode,
    401,
    'the unprefixed name is not read in production',
  )
})

t.test('whoami answers the contract shape', async (t) => {
  const user = await signUp(app)
  const res = await whoami(user.cookie)
  t.same(Object.keys(res.json()).sort(), ['email', 'emailVerified', 'id', 'name', 'plan', 'role', 'sessionExpiresAt'])
  t.match(res.json(), { id: user.id, email: user.email, role: 'member', plan: 'free', emailVerified: false })
  t.equal((await call(app, 'GET', '/api/v1/whoami')).statusCode, 401)
})

t.test('the app clock drives expiry, renewal, the cookie and the session list', async (t) => {
  let offset = 0
  const clocked = await buildTestApp({ deps: { clock: { now: () => new Date(Date.now() + offset) } } })
  const at = (days: number) => {
    offset = days * DAY
  }
  const who = (cookie: string) => call(clocked, 'GET', '/api/v1/whoami', { cookie })
  const renewedCookie = (res: LightMyRequestResponse) => setCookies(res).find((c) => /session_token=[^;]+/.test(c))

  t.test('past the expiry: 401, the cookie is cleared and the session deleted', async (t) => {
    at(0)
    const user = await signUp(clocked)
    t.equal((await who(user.cookie)).statusCode, 200)
    at(30.01)
    const res = await who(user.cookie)
    t.equal(res.statusCode, 401)
    t.ok(
      setCookies(res).some((c) => /session_token=;/.test(c)),
      'the browser is told to drop it',
    )
    const rows = await clocked.db.selectFrom('session').select('id').where('user_id', '=', user.id).execute()
    t.equal(rows.length, 0, 'an expired session is deleted when it is presented')
    at(0)
    t.equal((await who(user.cookie)).statusCode, 401, 'and stays gone when the clock comes back')
  })

  t.test('past half of the lifetime: renewed for the full lifetime from the clock, the cookie re-set', async (t) => {
    at(0)
    const user = await signUp(clocked)
    at(14)
    t.notOk(renewedCookie(await who(user.cookie)), 'more than half left: no renewal')
    at(16)
    const res = await who(user.cookie)
    t.equal(res.statusCode, 200)
    const cookie = renewedCookie(res)
    t.ok(cookie, 'the cookie is sent again')
    const maxAge = Number(/Max-Age=(\d+)/i.exec(cookie!)?.[1])
    t.ok(maxAge > 30 * 24 * 3600 - 60 && maxAge <= 30 * 24 * 3600, `Max-Age is the full lifetime on the clock (${maxAge})`)
    const expected = Date.now() + 46 * DAY
    const expiresAt = new Date(res.json().sessionExpiresAt).getTime()
    t.ok(Math.abs(expiresAt - expected) < 60_000, 'the session ends 30 days after the renewal')
    const row = await clocked.db
      .selectFrom('session')
      .select('expires_at')
      .where('user_id', '=', user.id)
      .executeTakeFirstOrThrow()
    t.equal(row.expires_at.getTime(), expiresAt, 'the server-side expiry moved forward')
    at(30.5)
    const later = await who(user.cookie)
    t.equal(later.statusCode, 200, 'alive past the first 30 days')
    t.notOk(renewedCookie(later), 'more than half of the renewed lifetime left: no renewal')
    at(46.01)
    t.equal((await who(user.cookie)).statusCode, 401, 'and ends at the renewed expiry')
  })

  t.test('get-session answers the renewed expiry on the request that renews', async (t) => {
    at(200)
    const user = await signUp(clocked)
    const get = async () => (await call(clocked, 'GET', '/api/auth/get-session', { cookie: user.cookie })).json()
    const first = await get() // now answered from memory, its JSON kept with the cached session
    t.same(await get(), first, 'the same answer while nothing changes')
    at(216)
    const renewed = await get()
    t.ok(Math.abs(new Date(renewed.session.expiresAt).getTime() - (Date.now() + 246 * DAY)) < 60_000, 'the new expiry')
    t.not(renewed.session.updatedAt, first.session.updatedAt)
  })

  t.test('a new session, its cookie and the session list are dated by the clock', async (t) => {
    at(100)
    const user = await signUp(clocked)
    const browser = await call(clocked, 'POST', '/api/auth/sign-in/email', {
      body: { email: user.email, password: user.password, rememberMe: false },
    })
    const browserCookie = sessionCookieOf(browser)!
    const session = (await call(clocked, 'GET', '/api/auth/get-session', { cookie: user.cookie })).json().session
    t.ok(Math.abs(new Date(session.createdAt).getTime() - (Date.now() + 100 * DAY)) < 60_000, "created at the clock's now")
    t.ok(Math.abs(new Date(session.expiresAt).getTime() - (Date.now() + 130 * DAY)) < 60_000, 'expires 30 days later')
    t.equal((await call(clocked, 'GET', '/api/auth/list-sessions', { cookie: user.cookie })).json().length, 2)
    at(102)
    t.equal((await who(browserCookie)).statusCode, 401, 'the one-day browser session has ended')
    const list = await call(clocked, 'GET', '/api/auth/list-sessions', { cookie: user.cookie })
    t.equal(list.json().length, 1, "the list shows only the sessions live at the clock's now")
  })
})
