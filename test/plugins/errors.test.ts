import { connect, type AddressInfo } from 'node:net'
import { sql } from 'kysely'
import t from 'tap'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { PUBLIC } from '../../src/shared/route-policy.js'
import { buildTestApp, call, TEST_ENV, WEB_ORIGIN } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

const app = await buildTestApp()

/** A sign-in request from the trusted origin with this raw body, sent as JSON unless `headers` say otherwise. */
const signInWithBody = (payload: string, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: '/api/auth/sign-in/email',
    headers: { 'content-type': 'application/json', origin: WEB_ORIGIN, ...headers },
    payload,
  })

t.test('unknown route is a 404 in the one error shape', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/api/v1/nope' })
  t.equal(res.statusCode, 404)
  t.match(res.json(), { code: 'NOT_FOUND', status: 404, message: String })
  t.ok(res.headers['x-request-id'])
})

t.test('a well-formed x-request-id is echoed, a hostile one replaced', async (t) => {
  const ok = await app.inject({ method: 'GET', url: '/api/health/live', headers: { 'x-request-id': 'abc-123' } })
  t.equal(ok.headers['x-request-id'], 'abc-123')
  const bad = await app.inject({ method: 'GET', url: '/api/health/live', headers: { 'x-request-id': 'a b<script>' } })
  t.not(bad.headers['x-request-id'], 'a b<script>')
})

t.test('malformed JSON and an empty JSON body are 400 BAD_REQUEST', async (t) => {
  for (const payload of ['{"email":', '']) {
    const res = await signInWithBody(payload)
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.match(res.json(), { code: 'BAD_REQUEST', status: 400 })
  }
})

t.test('a body over the limit is 413', async (t) => {
  const res = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: 'a@b.co', password: 'x'.repeat(70_000) } })
  t.equal(res.statusCode, 413)
  t.match(res.json(), { code: 'PAYLOAD_TOO_LARGE', status: 413 })
})

t.test('text/plain is 415', async (t) => {
  const res = await signInWithBody('hello', { 'content-type': 'text/plain' })
  t.equal(res.statusCode, 415)
  t.match(res.json(), { code: 'UNSUPPORTED_MEDIA_TYPE' })
})

t.test('unknown keys are a 400 VALIDATION_ERROR with issues', async (t) => {
  const res = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: 'a@b.co', password: 'x', role: 'admin' } })
  t.equal(res.statusCode, 400)
  const body = res.json()
  t.equal(body.code, 'VALIDATION_ERROR')
  t.ok(Array.isArray(body.data.issues) && body.data.issues.length > 0)
})

t.test('health answers with the database status', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { status: 'ok', database: 'ok', version: String, uptimeSeconds: Number })
})

t.test('the openapi document and its rendered page are served', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })
  t.equal(res.statusCode, 200)
  const doc = res.json()
  t.equal(doc.openapi, '3.1.0')
  const page = await app.inject({ method: 'GET', url: '/api/v1/docs' })
  t.ok(page.statusCode === 200 || page.statusCode === 302)
})

t.test('a declared Content-Length over the limit is 413 before the body is read', async (t) => {
  const res = await signInWithBody('{}', { 'content-length': String(10 * 1024 * 1024) })
  t.equal(res.statusCode, 413)
  t.same(res.json(), { code: 'PAYLOAD_TOO_LARGE', status: 413, message: 'Request body is too large', defined: false })
})

t.test('every error body is JSON with exactly code, status, message and optional data', async (t) => {
  const responses = [
    await app.inject({ method: 'GET', url: '/api/v1/nope' }),
    await app.inject({ method: 'DELETE', url: '/api/health' }),
    await signInWithBody('<a/>', { 'content-type': 'application/xml' }),
    await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: 'not-an-email', password: 'x' } }),
  ]
  for (const res of responses) {
    t.match(res.headers['content-type'], /^application\/json/)
    const body = res.json()
    t.same(
      Object.keys(body)
        .filter((k) => k !== 'data')
        .sort(),
      ['code', 'defined', 'message', 'status'],
    )
    t.equal(body.defined, false, "oRPC's error JSON")
    t.equal(body.status, res.statusCode)
    t.ok(res.headers['x-request-id'])
  }
})

t.test('an unexpected throw is a generic 500, without details, logged with the request id', async (t) => {
  const lines: string[] = []
  const logStream = { write: (line: string) => void lines.push(line) }
  const own = await buildApp(loadConfig({ ...TEST_ENV, LOG_LEVEL: 'info' }), { database: await testDatabase(), logStream })
  t.teardown(() => own.close())
  // Public probes: the throw, not a session, is under test.
  const config = { policy: PUBLIC }
  own.get('/api/v1/test-throw', { config }, async () => {
    throw new Error('relation "secret_table" does not exist at /srv/app/src/thing.ts:12')
  })
  own.get('/api/v1/test-throw-value', { config }, async () => {
    throw 'a bare string'
  })
  await own.ready()

  const res = await own.inject({ method: 'GET', url: '/api/v1/test-throw', headers: { 'x-request-id': 'req-throw-1' } })
  t.equal(res.statusCode, 500)
  t.same(res.json(), { code: 'INTERNAL_SERVER_ERROR', status: 500, message: 'Something went wrong on our side', defined: false })
  t.notMatch(res.body, /secret_table|\/srv\/app|stack|at /)
  t.equal(res.headers['x-request-id'], 'req-throw-1')

  const logged = lines.map((l) => JSON.parse(l) as { level?: number; reqId?: string; err?: { message?: string; stack?: string } })
  const errorLine = logged.find((l) => l.level === 50 && l.reqId === 'req-throw-1' && l.err)
  t.ok(errorLine, 'an error line carries the request id')
  t.match(errorLine?.err?.message, /secret_table/, 'the details go to the log')
  t.ok(errorLine?.err?.stack, 'with the stack')

  const bare = await own.inject({ method: 'GET', url: '/api/v1/test-throw-value' })
  t.equal(bare.statusCode, 500)
  t.same(bare.json(), { code: 'INTERNAL_SERVER_ERROR', status: 500, message: 'Something went wrong on our side', defined: false })
})

t.test('router errors are in the one error shape with a request id', async (t) => {
  const long = await app.inject({ method: 'GET', url: `/api/v1/journal/entries/${'a'.repeat(300)}` })
  t.equal(long.statusCode, 400)
  t.match(long.json(), { code: 'BAD_REQUEST', status: 400 })
  t.ok(long.headers['x-request-id'])
  const bad = await app.inject({ method: 'GET', url: '/api/v1/journal/entries/%E0%A4%A' })
  t.equal(bad.statusCode, 400)
  t.match(bad.json(), { code: 'BAD_REQUEST', status: 400 })
})

t.test('a value the database cannot store is a 400, not a 500', async (t) => {
  // Refused by the schema where the route knows its text...
  const email = `nul-${Date.now()}@example.com`
  const res = await call(app, 'POST', '/api/auth/sign-up/email', {
    body: { name: 'nul\u0000byte', email, password: 'long enough password' },
  })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { code: 'VALIDATION_ERROR', status: 400 })
  t.equal(await app.db.selectFrom('user').select('id').where('email', '=', email).executeTakeFirst(), undefined)

  // ...and by the database wherever a value reaches it unchecked: still the one 400.
  const own = await buildApp(loadConfig(TEST_ENV), { database: await testDatabase() })
  t.teardown(() => own.close())
  own.get('/api/v1/test-unstorable', { config: { policy: PUBLIC } }, async () => {
    await sql`select ${'nul\u0000byte'}::text`.execute(own.db)
    return { stored: true }
  })
  await own.ready()
  const refused = await own.inject({ method: 'GET', url: '/api/v1/test-unstorable' })
  t.equal(refused.statusCode, 400)
  t.same(refused.json(), {
    code: 'BAD_REQUEST',
    status: 400,
    message: 'The request contains a value that cannot be stored',
    defined: false,
  })
})

t.test('sign-out accepts no body, an empty object and JSON null', async (t) => {
  for (const payload of [undefined, '{}', 'null']) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/auth/sign-out',
      headers: { origin: WEB_ORIGIN, ...(payload ? { 'content-type': 'application/json' } : {}) },
      ...(payload ? { payload } : {}),
    })
    t.equal(res.statusCode, 200, `payload ${payload}`)
  }
})

t.test('what Node answers by itself (unreadable requests) is in the one shape, with the headers of every answer', async (t) => {
  const server = await buildTestApp()
  await server.listen({ port: 0, host: '127.0.0.1' })
  const { port } = server.server.address() as AddressInfo
  const raw = (request: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(request))
      let data = ''
      socket.on('data', (chunk) => (data += chunk.toString('latin1')))
      socket.on('end', () => resolve(data))
      socket.on('close', () => resolve(data))
      socket.on('error', reject)
    })
  const cases: Array<[string, string, number]> = [
    ['a malformed header line', 'GET /api/health/live HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n', 400],
    ['an unknown HTTP version', 'GET /api/health/live HTTP/9.9\r\nHost: x\r\n\r\n', 400],
    [
      'Content-Length with chunked',
      'POST /api/auth/sign-out HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      400,
    ],
    ['headers over the limit', `GET /api/health/live HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
    ['an Expect it cannot meet', 'GET /api/health/live HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n', 417],
  ]
  for (const [name, request, status] of cases) {
    const answer = await raw(request)
    const [head = '', body = ''] = answer.split('\r\n\r\n')
    t.match(head, new RegExp(`^HTTP/1.1 ${status} `), name)
    t.match(head.toLowerCase(), /x-content-type-options: nosniff/, `${name}: nosniff`)
    t.match(head.toLowerCase(), /cache-control: no-store/, `${name}: no-store`)
    t.match(JSON.parse(body), { code: 'BAD_REQUEST', status, message: String }, `${name}: the one shape`)
    t.same(Object.keys(JSON.parse(body)).sort(), ['code', 'defined', 'message', 'status'])
    t.equal(JSON.parse(body).defined, false, `${name}: oRPC's error JSON`)
  }
})

t.test('an absolute-form request target is routed by its path; its host is never echoed', async (t) => {
  const server = await buildTestApp()
  await server.listen({ port: 0, host: '127.0.0.1' })
  const { port } = server.server.address() as AddressInfo
  const res = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write('GET http://attacker.example/api/v1/docs/static/index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    )
    let data = ''
    socket.on('data', (chunk) => (data += chunk.toString('latin1')))
    socket.on('end', () => resolve(data))
    socket.on('error', reject)
  })
  t.notMatch(res, /attacker\.example/i, "no Location (or anything) names the absolute form's host")
  t.match(res, /^HTTP\/1.1 (200|302) /)
})
