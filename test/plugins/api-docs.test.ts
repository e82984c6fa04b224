// Issue 34, finding 8: the API's document and reference page are a map of every route and its rules.
// Production serves them only when API_DOCS says so (development and tests by default), and never
// inside another site's frame.
import t from 'tap'
import { loadConfig } from '../../src/config.js'
import { buildTestApp, TEST_ENV } from '../helpers/app.js'

const DOCS = ['/api/v1/openapi.json', '/api/v1/docs', '/api/v1/docs/static/index.html']
const PRODUCTION = { NODE_ENV: 'production', AUTH_URL: 'https://api.example.com', WEB_ORIGIN: 'https://app.example.com' }

t.test('API_DOCS: off in production unless set, on elsewhere unless set to false', async (t) => {
  const apiDocs = (env: Record<string, string>) => loadConfig({ ...TEST_ENV, ...env }, () => {}).apiDocs
  t.equal(apiDocs(PRODUCTION), false)
  t.equal(apiDocs({ ...PRODUCTION, API_DOCS: '' }), false, 'an empty value is unset')
  t.equal(apiDocs({ ...PRODUCTION, API_DOCS: 'true' }), true)
  t.equal(apiDocs({ NODE_ENV: 'development' }), true)
  t.equal(apiDocs({ NODE_ENV: 'development', API_DOCS: '' }), true, 'as .env.example leaves it')
  t.equal(apiDocs({ NODE_ENV: 'development', API_DOCS: 'false' }), false)
  t.throws(() => loadConfig({ ...TEST_ENV, API_DOCS: 'yes' }, () => {}), /API_DOCS/)
})

t.test('production without API_DOCS serves no document and no reference page', async (t) => {
  const app = await buildTestApp({ env: PRODUCTION })
  for (const url of DOCS) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 404, url)
  }
  t.ok(app.swagger().paths, 'the document is still built in-process')
})

t.test('served when configured, never framed', async (t) => {
  const app = await buildTestApp({ env: { ...PRODUCTION, API_DOCS: 'true' } })
  for (const url of [...DOCS, '/api/v1/docs/static/swagger-initializer.js']) {
    const res = await app.inject({ method: 'GET', url })
    t.ok([200, 302].includes(res.statusCode), `${url}: ${res.statusCode}`)
    t.equal(res.headers['x-frame-options'], 'DENY', `${url}: X-Frame-Options`)
    t.match(res.headers['content-security-policy'], /(^|; )frame-ancestors 'none'($|;)/, `${url}: frame-ancestors`)
  }
  const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json()
  t.equal(doc.openapi, '3.1.0')
})

t.test('development serves them by default, framing refused there too', async (t) => {
  const app = await buildTestApp()
  const res = await app.inject({ method: 'GET', url: '/api/v1/docs' })
  t.equal(res.statusCode, 200)
  t.match(res.body, /<html/i)
  t.equal(res.headers['x-frame-options'], 'DENY')
})
