// Trusted origins, the CSRF rule and hand-written CORS (docs/http-contract.md, "Trusted origins, CSRF and CORS").
import t, { type Test } from 'tap'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { PUBLIC } from '../../src/shared/route-policy.js'
import { buildTestApp, TEST_ENV, WEB_ORIGIN } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'
import { logLines } from '../helpers/log-lines.js'

const EVIL = 'https://evil.example'
const EXTRA = 'https://admin.example.com'
const API_ORIGIN = 'http://localhost:8787'
const COOKIE = 'better-auth.session_token=some.value'

// The real app plus probe routes, so the rule is tested on paths of every kind whatever the
// domain routes do with the request afterwards.
const app = await buildApp(loadConfig({ ...TEST_ENV, AUTH_TRUSTED_ORIGIN: EXTRA }), { database: await testDatabase() })
t.teardown(() => app.close())
// Public probes: a session is not what these tests are about.
const config = { policy: PUBLIC }
for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const) {
  app.route({ method, url: '/api/v1/test-probe', config, handler: async () => ({ reached: true }) })
}
app.get('/api/auth/test-probe', { config }, async () => ({ reached: true }))
app.post('/api/v1/payments/webhook/test-probe', { config: { policy: { access: 'public', checkOrigin: false } } }, async () => ({
  reached: true,
}))
app.get('/api/test-probe', { config }, async () => ({ reached: true }))
app.post('/api/test-probe', { config }, async () => ({ reached: true }))
await app.ready()

type Headers = Record<string, string>
const send = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS', url: string, headers: Headers = {}) =>
  app.inject({ method, url, headers, ...(method === 'GET' || method === 'OPTIONS' ? {} : { payload: {} }) })

function noCors(t: Test, res: { headers: Record<string, unknown> }) {
  t.equal(res.headers['access-control-allow-origin'], undefined, 'no Access-Control-Allow-Origin')
  t.equal(res.headers['access-control-allow-credentials'], undefined, 'no Access-Control-Allow-Credentials')
}

t.test('an untrusted Origin on a POST to /api/v1 is 403 INVALID_ORIGIN without CORS headers', async (t) => {
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'] as const) {
    const res = await send(method, '/api/v1/test-probe', { origin: EVIL })
    t.equal(res.statusCode, 403, method)
    t.same(res.json(), {
      code: 'INVALID_ORIGIN',
      status: 403,
      message: `Origin ${EVIL} is not a trusted origin: a web app's origin is trusted when it is listed in AUTH_TRUSTED_ORIGIN (comma-separated) or is WEB_ORIGIN`,
      data: { origin: EVIL },
      defined: false,
    })
    noCors(t, res)
  }
})

t.test('an untrusted Origin on sign-in is 403 INVALID_ORIGIN', async (t) => {
  const res = await app.inject({
    method: 'POST',
    url: '/api/auth/sign-in/email',
    headers: { origin: EVIL },
    payload: { email: 'someone@example.com', password: 'whatever-password' },
  })
  t.equal(res.statusCode, 403)
  t.match(res.json(), { code: 'INVALID_ORIGIN', status: 403 })
})

t.test('a GET to /api/auth with an untrusted Origin is 403', async (t) => {
  for (const url of ['/api/auth/test-probe', '/api/auth/get-session']) {
    const res = await send('GET', url, { origin: EVIL })
    t.equal(res.statusCode, 403, url)
    t.equal(res.json().code, 'INVALID_ORIGIN')
  }
})

t.test('a GET to /api/v1 with an untrusted Origin is served, but without CORS headers', async (t) => {
  const res = await send('GET', '/api/v1/test-probe', { origin: EVIL })
  t.equal(res.statusCode, 200)
  noCors(t, res)
})

t.test('origins are compared exactly: scheme, host and port', async (t) => {
  t.equal(WEB_ORIGIN, 'http://localhost:3000', 'each near miss below is one change to this origin')
  const nearMisses = [
    WEB_ORIGIN.replace('http:', 'https:'),
    WEB_ORIGIN.replace(':3000', ':3001'),
    WEB_ORIGIN.replace('localhost', '127.0.0.1'),
    `${WEB_ORIGIN}.evil.example`,
    `${WEB_ORIGIN}/`,
  ]
  for (const origin of nearMisses) {
    const res = await send('POST', '/api/v1/test-probe', { origin })
    t.equal(res.statusCode, 403, origin)
  }
})

t.test('Origin: null is 403 MISSING_OR_NULL_ORIGIN', async (t) => {
  const res = await send('POST', '/api/v1/test-probe', { origin: 'null', cookie: COOKIE })
  t.equal(res.statusCode, 403)
  t.equal(res.json().code, 'MISSING_OR_NULL_ORIGIN')
  noCors(t, res)
  const auth = await send('GET', '/api/auth/test-probe', { origin: 'null' })
  t.equal(auth.statusCode, 403)
  t.equal(auth.json().code, 'MISSING_OR_NULL_ORIGIN')
})

t.test('a state-changing request with a cookie and neither Origin nor Referer is 403 MISSING_OR_NULL_ORIGIN', async (t) => {
  for (const url of ['/api/v1/test-probe', '/api/auth/sign-out']) {
    const res = await send('POST', url, { cookie: COOKIE })
    t.equal(res.statusCode, 403, url)
    t.same(res.json(), { code: 'MISSING_OR_NULL_ORIGIN', status: 403, message: 'Origin header is required', defined: false })
  }
})

t.test('without Origin, the Referer of a state-changing request is checked the same way', async (t) => {
  const foreign = await send('POST', '/api/v1/test-probe', { cookie: COOKIE, referer: `${EVIL}/page` })
  t.equal(foreign.statusCode, 403)
  t.equal(foreign.json().code, 'INVALID_ORIGIN')
  const garbage = await send('POST', '/api/v1/test-probe', { referer: 'not a url' })
  t.equal(garbage.statusCode, 403, 'an unreadable Referer is not trusted')
  const trusted = await send('POST', '/api/v1/test-probe', { cookie: COOKIE, referer: `${WEB_ORIGIN}/settings?tab=1` })
  t.equal(trusted.statusCode, 200)
  t.same(trusted.json(), { reached: true })
})

t.test('no cookie and no Origin (a server or command-line client) passes', async (t) => {
  const res = await send('POST', '/api/v1/test-probe')
  t.equal(res.statusCode, 200)
  t.same(res.json(), { reached: true })
})

t.test('a GET navigation to /api/auth with a foreign Referer passes (the provider redirect)', async (t) => {
  const probe = await send('GET', '/api/auth/test-probe', { referer: 'https://accounts.google.com/', cookie: COOKIE })
  t.equal(probe.statusCode, 200)
  const callback = await send('GET', '/api/auth/callback/idp?code=x&state=y', { referer: 'https://accounts.google.com/' })
  t.not(callback.statusCode, 403, 'the real callback route is not refused by the origin check')
})

t.test('a route that declares checkOrigin: false (the payment webhook) is exempt from the origin check', async (t) => {
  const res = await send('POST', '/api/v1/payments/webhook/test-probe', { origin: EVIL, cookie: COOKIE })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { reached: true })
  const bare = await send('POST', '/api/v1/payments/webhook/test-probe', { cookie: COOKIE })
  t.equal(bare.statusCode, 200)
})

t.test('state-changing routes are checked whatever their prefix; GETs outside /api/auth are served', async (t) => {
  const res = await send('GET', '/api/test-probe', { origin: EVIL })
  t.equal(res.statusCode, 200)
  noCors(t, res)
  const post = await send('POST', '/api/test-probe', { origin: EVIL })
  t.equal(post.statusCode, 403)
  t.equal(post.json().code, 'INVALID_ORIGIN')
  const bare = await send('POST', '/api/test-probe', { cookie: COOKIE })
  t.equal(bare.statusCode, 403)
  t.equal(bare.json().code, 'MISSING_OR_NULL_ORIGIN')
})

t.test('the rule follows the route that matched, however its path is spelled', async (t) => {
  for (const url of ['/%61pi/v1/test-probe', '/api/%76%31/test-probe', '/%61%70%69/auth/test-probe']) {
    const method = url.includes('auth') ? 'GET' : 'POST'
    const res = await send(method, url, { origin: EVIL })
    t.equal(res.statusCode, 403, `${method} ${url}`)
    t.equal(res.json().code, 'INVALID_ORIGIN')
  }
  const res = await send('POST', '/%61pi/v1/test-probe', { cookie: COOKIE })
  t.equal(res.json().code, 'MISSING_OR_NULL_ORIGIN', 'a cookie without Origin on an encoded path')
})

t.test('every trusted origin gets CORS headers with credentials and Vary: Origin', async (t) => {
  for (const origin of [WEB_ORIGIN, API_ORIGIN, EXTRA]) {
    const res = await send('POST', '/api/v1/test-probe', { origin, cookie: COOKIE })
    t.equal(res.statusCode, 200, origin)
    t.equal(res.headers['access-control-allow-origin'], origin)
    t.equal(res.headers['access-control-allow-credentials'], 'true')
    t.match(res.headers.vary, /Origin/)
  }
})

t.test('error responses to a trusted origin keep their CORS headers (the browser can read them)', async (t) => {
  const res = await send('GET', '/api/v1/does-not-exist', { origin: WEB_ORIGIN })
  t.equal(res.statusCode, 404)
  t.equal(res.headers['access-control-allow-origin'], WEB_ORIGIN)
  t.equal(res.headers['access-control-allow-credentials'], 'true')
})

t.test('Vary: Origin is sent whether or not an Origin came', async (t) => {
  const res = await send('GET', '/api/health/live')
  t.match(res.headers.vary, /Origin/)
  noCors(t, res)
})

t.test('a preflight from a trusted origin is 204 with methods, headers and max-age', async (t) => {
  const res = await send('OPTIONS', '/api/v1/test-probe', {
    origin: WEB_ORIGIN,
    'access-control-request-method': 'PATCH',
    'access-control-request-headers': 'content-type',
  })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.equal(res.headers['access-control-allow-origin'], WEB_ORIGIN)
  t.equal(res.headers['access-control-allow-credentials'], 'true')
  t.match(res.headers['access-control-allow-methods'], /PATCH/)
  t.match(res.headers['access-control-allow-methods'], /DELETE/)
  t.match(String(res.headers['access-control-allow-headers']).toLowerCase(), /content-type/)
  t.ok(Number(res.headers['access-control-max-age']) > 0)
  t.match(res.headers.vary, /Origin/)
})

/** A CORS header's list, lower-cased. */
const listed = (value: unknown) =>
  String(value ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean)

t.test("a trusted origin's preflight allows the headers oRPC's link plugins send, each by name", async (t) => {
  // SimpleCsrfProtectionLinkPlugin, BatchLinkPlugin, an event iterator's retry, and ours.
  const asked = ['content-type', 'x-csrf-token', 'x-orpc-batch', 'last-event-id', 'authorization', 'x-request-id']
  const res = await send('OPTIONS', '/api/v1/journal/createEntry/__batch__', {
    origin: WEB_ORIGIN,
    'access-control-request-method': 'POST',
    'access-control-request-headers': asked.join(','),
  })
  t.equal(res.statusCode, 204)
  const allowed = listed(res.headers['access-control-allow-headers'])
  for (const header of asked) t.ok(allowed.includes(header), `${header} is allowed`)
  t.notOk(allowed.includes('*'), 'no wildcard: with credentials a browser reads it as a header named "*"')
})

t.test('answers to a trusted origin expose Retry-After and X-Request-Id, errors included; others expose nothing', async (t) => {
  const answers = [
    await send('POST', '/api/v1/test-probe', { origin: WEB_ORIGIN }),
    await send('GET', '/api/v1/does-not-exist', { origin: EXTRA }),
    await send('GET', '/api/v1/profile', { origin: WEB_ORIGIN }),
  ]
  t.same(
    answers.map((res) => res.statusCode),
    [200, 404, 401],
  )
  for (const res of answers) {
    const exposed = listed(res.headers['access-control-expose-headers'])
    t.same(exposed, ['retry-after', 'x-request-id', 'set-auth-jwt'], `${res.statusCode}: named, never "*"`)
  }
  for (const headers of [{ origin: EVIL }, {}] as Headers[]) {
    const res = await send('GET', '/api/v1/test-probe', headers)
    t.equal(res.headers['access-control-expose-headers'], undefined, headers.origin ?? 'no Origin')
  }
})

t.test(
  'an untrusted origin is logged once a minute, naming WEB_ORIGIN and AUTH_TRUSTED_ORIGIN; the memory is bounded',
  async (t) => {
    const log = logLines()
    let offset = 0
    const logged = await buildTestApp({
      env: { LOG_LEVEL: 'warn' },
      deps: { logStream: log.stream, clock: { now: () => new Date(Date.now() + offset) } },
    })
    const refusals = () =>
      log.lines
        .map((line) => JSON.parse(line) as { level: number; msg: string; origin?: string })
        .filter((l) => l.level === 40 && l.msg.includes('untrusted origin'))
    const probe = (origin: string, method: 'OPTIONS' | 'POST' | 'GET' = 'POST') =>
      logged.inject({
        method,
        url: '/api/v1/profile',
        headers: { origin, ...(method === 'OPTIONS' && { 'access-control-request-method': 'POST' }) },
        ...(method === 'POST' && { payload: {} }),
      })

    t.equal((await probe(EVIL, 'OPTIONS')).statusCode, 403, 'the preflight is refused')
    t.equal((await probe(EVIL)).statusCode, 403)
    t.equal((await probe(EVIL, 'GET')).statusCode, 401, 'a GET is served without CORS headers, and counted as the same origin')
    t.equal((await probe(WEB_ORIGIN, 'GET')).statusCode, 401)
    let lines = refusals()
    t.equal(lines.length, 1, 'one line for three requests of one origin in a minute; none for a trusted one')
    t.equal(lines[0]!.origin, EVIL)
    t.match(lines[0]!.msg, EVIL)
    t.match(lines[0]!.msg, /WEB_ORIGIN/)
    t.match(lines[0]!.msg, /AUTH_TRUSTED_ORIGIN/)

    const referer = await logged.inject({
      method: 'POST',
      url: '/api/v1/profile',
      headers: { referer: 'https://other.example/page', cookie: COOKIE },
      payload: {},
    })
    t.equal(referer.statusCode, 403)
    t.equal(refusals().at(-1)!.origin, 'https://other.example', "a Referer's origin is named too")

    offset += 61_000
    await probe(EVIL)
    t.equal(refusals().filter((l) => l.origin === EVIL).length, 2, 'logged again the next minute')

    // A flood of distinct origins: at most 100 are remembered and logged a minute, then one line says so.
    offset += 61_000
    const before = refusals().length
    for (let i = 0; i < 150; i++) await probe(`https://flood-${i}.example`, 'GET')
    lines = refusals().slice(before)
    t.equal(lines.length, 101, '100 origins, then one line for the rest')
    t.match(lines.at(-1)!.msg, /more than 100 untrusted origins this minute/)
    offset += 61_000
    await probe('https://flood-149.example', 'GET')
    t.equal(refusals().at(-1)!.origin, 'https://flood-149.example', 'a new minute logs again')
  },
)

t.test('a preflight works for auth routes and routes that do not exist alike', async (t) => {
  for (const url of ['/api/auth/sign-in/email', '/api/v1/nothing-here']) {
    const res = await send('OPTIONS', url, { origin: WEB_ORIGIN, 'access-control-request-method': 'POST' })
    t.equal(res.statusCode, 204, url)
  }
})

t.test('a preflight from an untrusted or null origin is 403 without CORS headers', async (t) => {
  for (const origin of [EVIL, 'null']) {
    const res = await send('OPTIONS', '/api/v1/test-probe', { origin, 'access-control-request-method': 'POST' })
    t.equal(res.statusCode, 403, origin)
    t.equal(res.json().code, 'INVALID_ORIGIN')
    noCors(t, res)
    t.equal(res.headers['access-control-allow-methods'], undefined)
  }
})
