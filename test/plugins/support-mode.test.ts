// Read-only support mode, proven on every route the router holds: with a session an administrator
// opened as a member (impersonation), every route that changes state answers 403
// IMPERSONATION_READ_ONLY before its handler runs, whatever it is (public, a role's, a procedure by
// any method), the few reads that would hand the agent something to take away (the whole data
// export, a token) answer 403 IMPERSONATION_REFUSED, and every other read answers as it would for
// the member.
import t from 'tap'
import { buildTestApp, call, sessionCookieOf, signUp, signUpWithRole, WEB_ORIGIN } from '../helpers/app.js'
import { adminBrowser } from '../helpers/auth-client.js'
import { auditEvents } from '../helpers/expect.js'
import { logLines } from '../helpers/log-lines.js'
import { errorCodeOf, otherSpellings, routeTable } from '../helpers/routes.js'

const app = await buildTestApp()
await app.listen({ port: 0, host: '127.0.0.1' })
const admin = await signUpWithRole(app, 'admin')
const member = await signUp(app)
const browser = adminBrowser(`http://127.0.0.1:${(app.server.address() as { port: number }).port}`)
await browser.client.signIn.email({ email: admin.email, password: admin.password })
const started = await browser.client.admin.impersonateUser({ userId: member.id })
if (started.error) throw new Error(started.error.message)
const cookie = browser.cookie()

const routes = routeTable(app)

t.test('only the routes that end the impersonation, and batches of calls, are allowed whatever their method', async (t) => {
  const allowed = routes.filter((r) => r.policy.whileImpersonating === 'allowed')
  t.same([...new Set(allowed.filter((r) => !r.batch).map((r) => `${r.method} ${r.pattern}`))].sort(), [
    'POST /api/auth/admin/stop-impersonating',
    'POST /api/auth/sign-out',
  ])
  t.ok(
    allowed.filter((r) => r.batch).every((r) => r.procedure),
    'the rest are batch routes',
  )
})

/**
 * The agent sees what the member sees on screen; nothing leaves with them: no whole-data download,
 * no credential, no new way in to the account (a passkey, a provider login, a phone number, the address).
 */
const TAKEN_AWAY = [
  '/api/auth/change-email',
  '/api/auth/link-social',
  '/api/auth/passkey/generate-register-options',
  '/api/auth/passkey/verify-registration',
  '/api/auth/token',
  '/api/v1/me/export',
  '/api/v1/me/exportMyData',
]

t.test('the reads that hand out a copy to take away or a credential are refused, and only they', async (t) => {
  const refusedRoutes = routes.filter((r) => r.policy.whileImpersonating === 'refused' && !r.batch)
  t.same([...new Set(refusedRoutes.map((r) => r.pattern))].sort(), TAKEN_AWAY)
  for (const route of refusedRoutes) {
    if (route.method === 'OPTIONS') continue
    // The path as the route declares it and as an attacker spells it: the router decodes both alike.
    for (const url of [route.url, ...otherSpellings(route.url)]) {
      const res = await app.inject({
        method: route.method as 'GET',
        url,
        headers: { origin: WEB_ORIGIN, cookie, 'content-type': 'application/json' },
        ...(route.method === 'GET' || route.method === 'HEAD' ? {} : { payload: route.procedure ? '{"json":{}}' : '{}' }),
      })
      const code = route.method === 'HEAD' ? undefined : errorCodeOf(res.json(), route)
      t.same(
        [res.statusCode, code],
        [403, route.method === 'HEAD' ? undefined : 'IMPERSONATION_REFUSED'],
        `${route.method} ${url}`,
      )
    }
  }
  // Through a batch of calls, each judged by its own procedure's route.
  const batch = await app.inject({
    method: 'POST',
    url: '/api/v1/me/exportMyData/__batch__',
    headers: { origin: WEB_ORIGIN, cookie, 'x-orpc-batch': 'buffered' },
    payload: [{ url: 'http://api.example/api/v1/me/exportMyData', method: 'GET' }],
  })
  t.same(
    batch.json().map((a: { status: number; body: { json: { code: string } } }) => [a.status, a.body.json.code]),
    [[403, 'IMPERSONATION_REFUSED']],
  )
  // get-session answers as for the member, without the token header.
  const session = await app.inject({ method: 'GET', url: '/api/auth/get-session', headers: { cookie } })
  t.same([session.json()?.user.id, session.headers['set-auth-jwt']], [member.id, undefined])
  const own = await app.inject({ method: 'GET', url: '/api/auth/get-session', headers: { cookie: member.cookie } })
  t.ok(own.headers['set-auth-jwt'], 'the member’s own session gets its token')
  t.equal(
    (await app.inject({ method: 'GET', url: '/api/v1/me/export', headers: { origin: WEB_ORIGIN, cookie: member.cookie } }))
      .statusCode,
    200,
  )
  // Nothing was exported in the member's name: the one export recorded is the member's own.
  t.equal((await auditEvents(app.db, { action: 'personal_data.exported', targetId: member.id })).length, 1)
})

t.test('every route that changes state is 403 IMPERSONATION_READ_ONLY; every read answers', async (t) => {
  let refused = 0
  for (const route of routes) {
    if (route.policy.whileImpersonating !== undefined || route.method === 'OPTIONS') continue
    const acts = route.procedure ? !route.procedureReads : route.stateChanging || route.policy.actsOnGet === true
    const res = await app.inject({
      method: route.method as 'GET',
      url: route.url,
      headers: { origin: WEB_ORIGIN, cookie, 'content-type': 'application/json' },
      ...(route.method === 'GET' || route.method === 'HEAD' ? {} : { payload: route.procedure ? '{"json":{}}' : '{}' }),
    })
    const json = res.headers['content-type']?.toString().startsWith('application/json') && res.body ? res.json() : undefined
    const code = errorCodeOf(json, route)
    const where = `${route.method} ${route.pattern}`
    if (acts) {
      refused++
      // A HEAD (Fastify runs the GET's handler for it) is refused with no body to carry the code.
      const expected = route.method === 'HEAD' ? undefined : 'IMPERSONATION_READ_ONLY'
      if (res.statusCode !== 403 || code !== expected) t.fail(`${where}: ${res.statusCode} ${code}`)
    } else if (code === 'IMPERSONATION_READ_ONLY') t.fail(`${where} is a read, refused`)
  }
  t.ok(refused > 60, `${refused} routes refused`)
  // Nothing the walk sent ended the impersonation: every refusal came before its handler.
  const session = await app.inject({ method: 'GET', url: '/api/auth/get-session', headers: { cookie } })
  t.equal(session.json()?.session.impersonatedBy, admin.id)
})

t.test("a member's own session is not in support mode", async (t) => {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/journal/entries',
    headers: { origin: WEB_ORIGIN, cookie: member.cookie },
    payload: { content: 'Mine', mood: 4 },
  })
  t.equal(res.statusCode, 201)
})

t.test('with writes allowed, support still adds no way in to the member’s account', async (t) => {
  const log = logLines()
  const writable = await buildTestApp({
    env: { IMPERSONATION_ALLOWS_WRITES: 'true', PHONE_SIGN_IN: 'true', LOG_LEVEL: 'info' },
    deps: { logStream: log.stream },
  })
  const agent = await signUpWithRole(writable, 'admin')
  const owner = await signUp(writable)
  const opened = await call(writable, 'POST', '/api/auth/admin/impersonate-user', {
    cookie: agent.cookie,
    body: { userId: owner.id },
  })
  const support = sessionCookieOf(opened)!
  t.equal(opened.statusCode, 200)
  // The agent's own phone: a code sent while signed in as the member attaches the number (a fresh
  // session needs no password), and the agent could sign in by phone as the member for good.
  const phoneNumber = `+62813${String(process.pid % 10_000).padStart(4, '0')}001`
  t.equal(
    (await call(writable, 'POST', '/api/auth/phone-number/send-otp', { cookie: support, body: { phoneNumber } })).statusCode,
    200,
  )
  await (writable as unknown as { settled: () => Promise<void> }).settled()
  const code = log.lines
    .map((line) => JSON.parse(line) as { phoneCode?: { phoneNumber: string; code: string } })
    .findLast((entry) => entry.phoneCode?.phoneNumber === phoneNumber)?.phoneCode?.code
  const ways = [
    ['POST', '/api/auth/phone-number/verify', { phoneNumber, code: code ?? '000000', updatePhoneNumber: true }],
    // The address every emailed proof follows: moved without the password, it is the account's.
    ['POST', '/api/auth/change-email', { newEmail: `agent-${process.pid}@example.com` }],
    ['GET', '/api/auth/passkey/generate-register-options', undefined],
    ['POST', '/api/auth/passkey/verify-registration', { response: {} }],
    ['POST', '/api/auth/link-social', { provider: 'idp' }],
  ] as const
  for (const [method, url, body] of ways) {
    const res = await call(writable, method, url, { cookie: support, ...(body ? { body } : {}) })
    t.same([res.statusCode, res.json().code], [403, 'IMPERSONATION_REFUSED'], `${method} ${url}`)
  }
  const row = await writable.db
    .selectFrom('user')
    .select(['email', 'phone_number'])
    .where('id', '=', owner.id)
    .executeTakeFirstOrThrow()
  t.same(row, { email: owner.email, phone_number: null }, 'no way in was added')
})
