// The route policy, proven on EVERY route Fastify registered (read from its onRoute notifications,
// not from a list kept here): anonymous callers get 401 unless the route is declared public, members
// get 403 on role routes, state-changing requests with a foreign or missing Origin get 403 unless the
// route is declared exempt, every response carries nosniff and (unless declared cacheable) no-store,
// and percent-encoded spellings of each path get exactly the same answers.
import type { FastifyInstance, InjectOptions } from 'fastify'
import t, { type Test } from 'tap'
import { call, signUp, signUpWithRole, WEB_ORIGIN, buildTestApp } from '../helpers/app.js'
import { errorCodeOf, otherSpellings, routeTable, type TableRoute } from '../helpers/routes.js'

const EVIL = 'https://evil.example'

// Sandbox payments so its confirm page is registered too; an identity provider so its routes answer;
// development, so its mail inbox (/api/dev, absent elsewhere: test/dev/mail-inbox.test.ts) is walked too;
// sign-in by phone, off by default, so its routes are walked too.
const app = await buildTestApp({
  env: {
    NODE_ENV: 'development',
    PAYMENT_GATEWAY: 'sandbox',
    IDP_CLIENT_ID: 'client',
    IDP_CLIENT_SECRET: 'secret',
    IDP_ISSUER: 'http://127.0.0.1:9/issuer',
    PHONE_SIGN_IN: 'true',
    // The walk sends every password-checking route (REST and procedure, every method) the member's
    // cookie several times; the per-account budget is tested in password-recheck.test.ts.
    RATE_LIMIT_PASSWORD_CHECKS_PER_MINUTE: '1000000',
  },
})
const member = await signUp(app)
const admin = await signUpWithRole(app, 'admin')
const routes = routeTable(app)

// The only routes anyone may call without a session. A route that turns public by mistake, or a
// public route that loses its declaration, fails here; everything else is read from the route table.
const PUBLIC_ROUTES = [
  'GET /api/health',
  'GET /api/health/live',
  'GET /metrics',
  'GET /api/v1/openapi.json',
  'GET /api/v1/docs',
  'GET /api/v1/docs/',
  'GET /api/v1/docs/static/*',
  'GET /api/v1/docs/json',
  'GET /api/v1/docs/yaml',
  'GET /api/v1/docs/static/index.html',
  'GET /api/v1/docs/static/swagger-initializer.js',
  'POST /api/auth/sign-up/email',
  'POST /api/auth/sign-in/email',
  'POST /api/auth/sign-in/anonymous',
  'GET /api/auth/get-session',
  'GET /api/auth/jwks',
  'POST /api/auth/sign-out',
  'POST /api/auth/request-password-reset',
  'POST /api/auth/reset-password',
  'POST /api/auth/send-verification-email',
  'GET /api/auth/verify-email',
  'GET /api/auth/sign-in/idp',
  'POST /api/auth/sign-in/social',
  'GET /api/auth/callback/idp',
  'GET /api/auth/reset-password/:token',
  'GET /api/auth/ok',
  'GET /api/auth/error',
  'POST /api/auth/two-factor/verify-totp',
  'POST /api/auth/two-factor/verify-backup-code',
  'GET /api/auth/passkey/generate-authenticate-options',
  'POST /api/auth/passkey/verify-authentication',
  'GET /api/auth/security-notice',
  'POST /api/auth/secure-account',
  'POST /api/auth/email-otp/send-verification-otp',
  'POST /api/auth/email-otp/request-password-reset',
  'POST /api/auth/sign-in/email-otp',
  'POST /api/auth/email-otp/verify-email',
  'POST /api/auth/email-otp/reset-password',
  'POST /api/auth/sign-in/magic-link',
  'GET /api/auth/magic-link/verify',
  'POST /api/auth/magic-link/verify',
  'POST /api/auth/phone-number/send-otp',
  'POST /api/auth/phone-number/verify',
  'GET /api/auth/change-email/approve',
  'POST /api/auth/change-email/approve',
  'POST /api/v1/payments/webhook/:provider',
  'GET /api/v1/payments/sandbox/:paymentId',
  'GET /api/dev/mail',
  'GET /api/dev/mail/:id',
]
const ORIGIN_EXEMPT = ['POST /api/v1/payments/webhook/:provider']
// The routes that act even on GET (an event, an audit row) and so refuse cross-site requests, by
// path: the REST route and the procedure's, every method of each (test/plugins/cross-site.test.ts).
const REFUSES_CROSS_SITE = [
  '/api/auth/admin/get-user',
  '/api/auth/admin/list-users',
  '/api/v1/admin/analytics/usage',
  '/api/v1/admin/audit',
  '/api/v1/admin/getUsageAnalytics',
  '/api/v1/admin/listAuditEvents',
  '/api/v1/me/export',
  '/api/v1/me/exportMyData',
]

const key = (r: TableRoute) => `${r.method} ${r.pattern}`
/** A HEAD answer has no body: its status is all there is to compare. */
function refused(t: Test, r: TableRoute, res: { status: number; code: unknown }, status: number, code: string, name: string) {
  t.same([res.status, r.method === 'HEAD' ? code : res.code], [status, code], name)
}
const request = (r: TableRoute, url: string, headers: Record<string, string>): InjectOptions => ({
  method: r.method as InjectOptions['method'],
  url,
  headers,
  ...(r.stateChanging ? { payload: {} } : {}),
})
const answer = async (app: FastifyInstance, options: InjectOptions, route: TableRoute) => {
  const res = await app.inject(options)
  let code: unknown
  let message: unknown
  try {
    const body = res.json()
    code = errorCodeOf(body, route)
    message = (body as { message?: unknown } | null)?.message
  } catch {
    code = undefined
  }
  // The router's own 404 (no route matched), told from a handler's 404 by its message; a HEAD answer
  // has no body, so any 404 counts there.
  const unrouted =
    res.statusCode === 404 && (route.method === 'HEAD' || (typeof message === 'string' && message.startsWith('Route ')))
  return { status: res.statusCode, code, unrouted, headers: res.headers }
}

/**
 * What the route policy made of a request: its refusal (401 or 403 with its code), or that it let
 * the request through to a route (and whether the router found one). A handler may answer a second
 * call differently (a used token, a rate limit); the policy and the router may not.
 */
const policyVerdict = (res: { status: number; code: unknown; unrouted: boolean }) =>
  [401, 403].includes(res.status) ? { refused: [res.status, res.code] } : { through: res.unrouted ? 'no route' : 'routed' }

t.test('the route table is complete and every route is walked', async (t) => {
  t.ok(routes.length > 80, `${routes.length} method/route pairs`)
  for (const r of routes) t.ok(app.hasRoute({ method: r.method as 'GET', url: r.pattern }), `${key(r)} is in the router`)
  t.ok(
    routes.some((r) => key(r) === 'GET /api/v1/docs') && routes.some((r) => key(r) === 'GET /api/v1/docs/'),
    'both spellings of a prefix route are walked, though onRoute hears of one',
  )
})

t.test('only the declared public routes can be called without a session', async (t) => {
  // A batch route is public: each call it carries is judged by its own procedure's policy (below).
  const declared = [...new Set(routes.filter((r) => r.isPublic && r.method !== 'HEAD' && !r.batch).map(key))].sort()
  t.same(declared, [...PUBLIC_ROUTES].sort(), 'the public routes are exactly the listed ones')
  for (const r of routes) {
    const res = await answer(app, request(r, r.url, { origin: WEB_ORIGIN }), r)
    if (r.isPublic) t.not(res.code, 'UNAUTHORIZED', `${key(r)} is public`)
    else refused(t, r, res, 401, 'UNAUTHORIZED', `${key(r)} needs a session`)
  }
})

t.test(
  "each procedure has one batch route, GET and POST, with the batch policy; a call in it gets its procedure's verdict",
  async (t) => {
    const procedureRoutes = routes.filter((r) => r.procedure && !r.batch)
    const batchRoutes = routes.filter((r) => r.batch)
    const procedures = [...new Set(procedureRoutes.map((r) => r.procedure!))].sort()
    t.same(
      [...new Set(batchRoutes.map((r) => `${r.method} ${r.procedure}`))].sort(),
      procedures.flatMap((p) => [`GET ${p}`, `POST ${p}`]).sort(),
      'GET and POST batches for every procedure, nothing else',
    )
    for (const r of batchRoutes) {
      const own = procedureRoutes.find((p) => p.procedure === r.procedure)!
      t.equal(r.pattern, `${own.pattern}/__batch__`, `${key(r)} extends its procedure's path`)
      t.same(
        r.policy,
        { access: 'public', rateLimit: { global: false }, whileImpersonating: 'allowed' },
        `${key(r)}: public, each call takes its own budgets and its own verdict in support mode`,
      )
    }
    // Each procedure called through a batch, anonymously, as a member and as an admin: the call's
    // verdict (401, 403 or through) is the one its own route gives it alone.
    for (const own of procedureRoutes.filter((r) => r.method === 'POST')) {
      for (const [who, cookie] of [
        ['anonymous', undefined],
        ['member', member.cookie],
        ['admin', admin.cookie],
      ] as const) {
        const headers: Record<string, string> = { origin: WEB_ORIGIN, ...(cookie && { cookie }) }
        const alone = await answer(app, { method: 'POST', url: own.url, headers, payload: {} }, own)
        const batch = await app.inject({
          method: 'POST',
          url: `${own.url}/__batch__`,
          headers: { ...headers, 'x-orpc-batch': 'buffered' },
          payload: [{ url: `http://api.example${own.url}`, body: {} }],
        })
        const [call] = batch.json() as Array<{ status: number; body: { json?: { code?: string } } }>
        const verdict = (status: number, code: unknown) => ([401, 403].includes(status) ? [status, code] : 'through')
        t.same(verdict(call!.status, call!.body.json?.code), verdict(alone.status, alone.code), `${who}: ${own.procedure}`)
      }
    }
  },
)

t.test('routes declared for roles refuse a member with 403 and let an admin through the policy', async (t) => {
  const roleRoutes = routes.filter((r) => typeof r.policy.access === 'object')
  t.ok(roleRoutes.length >= 9, `${roleRoutes.length} role routes`)
  // A batch route's calls are judged by their own procedures' roles (the test above).
  for (const r of routes.filter((r) => r.pattern.startsWith('/api/v1/admin') && !r.batch)) {
    t.ok(roleRoutes.includes(r), `${key(r)} declares its roles`)
  }
  for (const r of roleRoutes) {
    const res = await answer(app, request(r, r.url, { origin: WEB_ORIGIN, cookie: member.cookie }), r)
    // better-auth's admin plugin's routes refuse with its codes (test/admin/admin-plugin.test.ts).
    const code = typeof r.policy.access === 'object' ? (r.policy.access.refusal?.code ?? 'FORBIDDEN') : 'FORBIDDEN'
    refused(t, r, res, 403, code, `member: ${key(r)}`)
    const asAdmin = await answer(app, request(r, r.url, { origin: WEB_ORIGIN, cookie: admin.cookie }), r)
    t.not(asAdmin.status, 403, `admin: ${key(r)}`)
  }
})

t.test('state-changing requests with a foreign Origin, or a cookie and no Origin, are refused', async (t) => {
  const exempt = routes.filter((r) => r.policy.checkOrigin === false).map(key)
  t.same(exempt, ORIGIN_EXEMPT, 'only the signed webhook is exempt')
  for (const r of routes.filter((r) => r.stateChanging)) {
    const foreign = await answer(app, request(r, r.url, { origin: EVIL, cookie: member.cookie }), r)
    const bare = await answer(app, request(r, r.url, { cookie: member.cookie }), r)
    const refererOnly = await answer(app, request(r, r.url, { cookie: member.cookie, referer: `${EVIL}/page` }), r)
    if (exempt.includes(key(r))) {
      t.not(foreign.status, 403, `${key(r)} is exempt`)
      continue
    }
    t.same([foreign.status, foreign.code], [403, 'INVALID_ORIGIN'], `foreign Origin: ${key(r)}`)
    t.same([bare.status, bare.code], [403, 'MISSING_OR_NULL_ORIGIN'], `cookie, no Origin: ${key(r)}`)
    t.same([refererOnly.status, refererOnly.code], [403, 'INVALID_ORIGIN'], `foreign Referer: ${key(r)}`)
  }
})

t.test('exactly the routes that act on GET refuse a cross-site navigation, under every method', async (t) => {
  const marked = routes.filter((r) => r.policy.refusesCrossSite)
  t.same([...new Set(marked.map((r) => r.pattern))].sort(), REFUSES_CROSS_SITE, 'the marked routes are exactly the listed ones')
  const navigation = { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', referer: `${EVIL}/` }
  for (const r of routes) {
    // The admin's cookie, so that a role route answers past its access rule.
    const res = await answer(app, request(r, r.url, { ...navigation, cookie: admin.cookie }), r)
    // A state-changing method meets the origin rule first, which judges the foreign Referer.
    if (r.policy.refusesCrossSite) refused(t, r, res, 403, r.stateChanging ? 'INVALID_ORIGIN' : 'CROSS_SITE_REQUEST', key(r))
    else if (!r.stateChanging && !r.pattern.startsWith('/api/auth/')) t.not(res.code, 'CROSS_SITE_REQUEST', key(r))
  }
})

t.test('every /api/auth route refuses a foreign Origin, whatever the method', async (t) => {
  for (const r of routes.filter((r) => r.pattern.startsWith('/api/auth/'))) {
    const res = await answer(app, request(r, r.url, { origin: EVIL }), r)
    refused(t, r, res, 403, 'INVALID_ORIGIN', key(r))
  }
})

// These end the member's session when they let it through (asking for a guest ends it, as every
// sign-in does): there each request of the member brings a session of its own, so the rest of the
// walk still runs signed in, and no spelling is compared with a session its plain spelling just ended.
const ENDS_SESSION = new Set(['POST /api/auth/sign-out', 'POST /api/auth/revoke-sessions', 'POST /api/auth/sign-in/anonymous'])

t.test('percent-encoded spellings of every path get the same answers', async (t) => {
  let compared = 0
  const walked = new Set<string>()
  for (const r of routes) {
    const variants: Array<[string, Record<string, string>]> = [
      ['anonymous', { origin: WEB_ORIGIN }],
      ['foreign origin', { origin: EVIL, cookie: member.cookie }],
      ['member', { origin: WEB_ORIGIN, cookie: member.cookie }],
    ]
    if (r.stateChanging) variants.push(['cookie without Origin', { cookie: member.cookie }])
    for (const [name, headers] of variants) {
      const own = async () =>
        name === 'member' && ENDS_SESSION.has(key(r)) ? { ...headers, cookie: (await signUp(app)).cookie } : headers
      // Every spelling gets the plain spelling's verdict: the same refusal, or through to the route.
      const plain = await answer(app, request(r, r.url, await own()), r)
      if (r.method !== 'HEAD') t.not(plain.unrouted, true, `${name}: ${key(r)} is routed`)
      for (const spelling of otherSpellings(r.url)) {
        const res = await answer(app, request(r, spelling, await own()), r)
        t.same(policyVerdict(res), policyVerdict(plain), `${name}: ${r.method} ${spelling}`)
        compared++
        walked.add(key(r))
      }
    }
  }
  t.ok(compared >= routes.length, `${compared} spellings compared on ${routes.length} method/route pairs`)
  t.same([...walked].sort(), [...new Set(routes.map(key))].sort(), 'every route had its spellings compared')
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: member.cookie })).statusCode, 200, 'the member walked signed in')
})

t.test('every response carries nosniff, and no-store unless the route is declared cacheable', async (t) => {
  for (const r of routes) {
    const variants: Array<Record<string, string>> = [
      { origin: WEB_ORIGIN },
      { origin: WEB_ORIGIN, cookie: member.cookie },
      { origin: EVIL },
    ]
    for (const headers of variants) {
      const res = await answer(app, request(r, r.url, headers), r)
      t.equal(res.headers['x-content-type-options'], 'nosniff', `${key(r)} ${res.status}`)
      if (r.policy.cacheable) t.not(res.headers['cache-control'], 'no-store', `${key(r)} may be cached`)
      else t.equal(res.headers['cache-control'], 'no-store', `${key(r)} ${res.status}`)
    }
  }
  const cacheable = routes.filter((r) => r.policy.cacheable).map((r) => r.pattern)
  t.ok(
    cacheable.every((p) => p === '/api/v1/openapi.json' || p.startsWith('/api/v1/docs') || p === '/api/auth/jwks'),
    'only the API document and its page, and the public keys that verify tokens',
  )
  for (const url of ['/api/v1/no-such-route', '/%zz', `/api/v1/journal/entries/${'x'.repeat(300)}`]) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.headers['x-content-type-options'], 'nosniff', url)
    t.equal(res.headers['cache-control'], 'no-store', url)
  }
})

t.test('sign-out with a cookie and neither Origin nor Referer is refused, and the session survives', async (t) => {
  const user = await signUp(app)
  const res = await app.inject({ method: 'POST', url: '/api/auth/sign-out', headers: { cookie: user.cookie } })
  t.same([res.statusCode, res.json().code], [403, 'MISSING_OR_NULL_ORIGIN'])
  t.equal((await call(app, 'GET', '/api/v1/whoami', { cookie: user.cookie })).statusCode, 200)
})

t.test('the reported bypass: an encoded path to make-admin with a foreign Origin', async (t) => {
  const target = await signUp(app)
  for (const url of [`/%61pi/v1/admin/users/${target.id}/make-admin`, `/api/v1/%61dmin/users/${target.id}/make-admin`]) {
    const res = await app.inject({ method: 'POST', url, headers: { origin: EVIL, cookie: admin.cookie }, payload: {} })
    t.same([res.statusCode, res.json().code], [403, 'INVALID_ORIGIN'], url)
  }
  const row = await app.db.selectFrom('user').select('role').where('id', '=', target.id).executeTakeFirstOrThrow()
  t.equal(row.role, 'member', 'nobody was promoted')
})

t.test('a policy that cannot be right stops the app at start-up', async (t) => {
  const cases: Array<[string, object]> = [
    ['unknown policy key "acess"', { acess: 'public' }],
    ['only a public route may skip the origin check', { checkOrigin: false }],
    ['a public route has no password to re-verify', { access: 'public', reverifiesPassword: true }],
    ['no role may call it', { access: { roles: [] } }],
    [
      'a route that refuses cross-site requests cannot skip the origin check',
      { access: 'public', checkOrigin: false, refusesCrossSite: true },
    ],
  ]
  for (const [message, policy] of cases) {
    const { buildApp } = await import('../../src/app.js')
    const { loadConfig } = await import('../../src/config.js')
    const { TEST_ENV } = await import('../helpers/app.js')
    const { testDatabase } = await import('../helpers/db.js')
    const broken = await buildApp(loadConfig(TEST_ENV), { database: await testDatabase() })
    broken.post('/api/v1/test-broken', { config: { policy: policy as never } }, async () => ({}))
    await t.rejects(
      async () => {
        await broken.ready()
      },
      new RegExp(message.replace(/[()]/g, '\\$&')),
      message,
    )
    await broken.close()
  }
})

t.test("the OpenAPI document states each documented route's policy", async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as {
    paths: Record<string, Record<string, { security?: unknown[]; 'x-route-policy'?: { access: unknown } }>>
  }
  let checked = 0
  for (const r of routes) {
    const operation = doc.paths[r.pattern.replace(/:([A-Za-z0-9_]+)/g, '{$1}')]?.[r.method.toLowerCase()]
    if (!operation) continue
    checked++
    t.same(operation['x-route-policy']?.access, r.policy.access ?? 'session', key(r))
    t.same(operation.security, r.isPublic ? [] : [{ sessionCookie: [] }], `${key(r)} security`)
  }
  t.ok(checked > 40, `${checked} operations checked`)
})

t.test('a cacheable answer never carries a session cookie, renewed or cleared', async (t) => {
  const user = await signUp(app)
  // Past half its life: any route that looked the session up would renew the cookie.
  await app.db
    .updateTable('session')
    .set({ expires_at: new Date(Date.now() + 5 * 86_400_000) })
    .where('user_id', '=', user.id)
    .execute()
  const cacheable = routes.filter((r) => r.policy.cacheable && r.method === 'GET')
  t.ok(cacheable.length >= 5)
  for (const r of cacheable) {
    for (const cookie of [user.cookie, 'better-auth.session_token=forged.value']) {
      const res = await app.inject({ method: 'GET', url: r.url, headers: { cookie } })
      t.equal(res.headers['set-cookie'], undefined, `${key(r)} ${cookie.slice(0, 30)}`)
    }
  }
  const renewed = await call(app, 'GET', '/api/auth/get-session', { cookie: user.cookie })
  t.match(String(renewed.headers['set-cookie']), /session_token=/, 'a no-store route renews it as before')
})
