import t from 'tap'
import { buildTestApp, call, WEB_ORIGIN } from '../helpers/app.js'

const app = await buildTestApp()

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

t.test('malformed JSON is 400 BAD_REQUEST', async (t) => {
  const res = await app.inject({
    method: 'POST', url: '/api/auth/sign-in/email',
    headers: { 'content-type': 'application/json', origin: WEB_ORIGIN }, payload: '{"email":',
  })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { code: 'BAD_REQUEST', status: 400 })
})

t.test('a body over the limit is 413', async (t) => {
  const res = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: 'a@b.co', password: 'x'.repeat(70_000) } })
  t.equal(res.statusCode, 413)
  t.match(res.json(), { code: 'PAYLOAD_TOO_LARGE', status: 413 })
})

t.test('text/plain is 415', async (t) => {
  const res = await app.inject({
    method: 'POST', url: '/api/auth/sign-in/email',
    headers: { 'content-type': 'text/plain', origin: WEB_ORIGIN }, payload: 'hello',
  })
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

t.test('openapi document lists the routes with their operation ids', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })
  t.equal(res.statusCode, 200)
  const doc = res.json()
  t.equal(doc.openapi, '3.1.0')
  t.equal(doc.paths['/api/auth/sign-in/email'].post.operationId, 'signInEmail')
  t.equal(doc.paths['/api/v1/whoami'].get.operationId, 'whoami')
  const page = await app.inject({ method: 'GET', url: '/api/v1/docs' })
  t.ok(page.statusCode === 200 || page.statusCode === 302)
})
