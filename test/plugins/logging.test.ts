// Secrets never reach the log: proved by reading what the real app writes.
import t from 'tap'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { redactUrl } from '../../src/plugins/logging.js'
import { TEST_ENV, WEB_ORIGIN } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

const lines: string[] = []
const logStream = { write: (line: string) => void lines.push(line) }
const app = await buildApp(loadConfig({ ...TEST_ENV, LOG_LEVEL: 'trace' }), { database: await testDatabase(), logStream })
t.teardown(() => app.close())
await app.ready()

const SECRETS = {
  cookie: 'cookie-secret-4f1c9a',
  bearer: 'bearer-secret-77ad02',
  password: 'password-secret-b81e33',
  query: 'query-secret-0c5d19',
  code: 'oauth-code-secret-9a2b',
}

t.test('cookies, authorization headers, passwords and query tokens are not logged', async (t) => {
  lines.length = 0
  const res = await app.inject({
    method: 'POST',
    url: `/api/auth/sign-in/email?token=${SECRETS.query}&code=${SECRETS.code}&lang=en`,
    headers: {
      origin: WEB_ORIGIN,
      cookie: `better-auth.session_token=${SECRETS.cookie}`,
      authorization: `Bearer ${SECRETS.bearer}`,
      'x-request-id': 'log-redaction-1',
    },
    payload: { email: 'nobody@example.com', password: SECRETS.password },
  })
  t.not(res.statusCode, 500)
  const log = lines.join('')
  t.ok(lines.length >= 2, 'the request was logged')
  t.match(log, /log-redaction-1/, 'log lines carry the request id')
  for (const [name, secret] of Object.entries(SECRETS)) t.notMatch(log, secret, `${name} is not in the log`)
  t.match(log, /\[Redacted\]/, 'redacted values are marked')
  t.match(log, /lang=en/, 'harmless query parameters stay readable')
})

t.test('at info a request is one line: id, method, URL, status and time; its arrival is logged only at debug', async (t) => {
  t.teardown(() => {
    app.log.level = 'trace'
  })
  for (const [level, expected] of [
    ['info', ['request completed']],
    ['debug', ['incoming request', 'request completed']],
  ] as const) {
    app.log.level = level
    lines.length = 0
    const id = `one-line-${level}`
    const res = await app.inject({ method: 'GET', url: '/api/health/live?lang=en', headers: { 'x-request-id': id } })
    t.equal(res.statusCode, 200)
    const own = lines.map((l) => JSON.parse(l)).filter((l) => l.reqId === id)
    t.same(
      own.map((l) => l.msg),
      expected,
      `${level}: ${expected.join(', ')}`,
    )
    const done = own.at(-1)
    t.match(done, { level: 30, req: { method: 'GET', url: '/api/health/live?lang=en' }, res: { statusCode: 200 } })
    t.type(done.responseTime, 'number')
  }
})

t.test("a refused request's line carries its error code beside the status", async (t) => {
  lines.length = 0
  const cases: Array<[string, Record<string, string>, number, string]> = [
    ['log-code-1', { origin: 'https://evil.example' }, 403, 'INVALID_ORIGIN'],
    ['log-code-2', { origin: WEB_ORIGIN }, 401, 'UNAUTHORIZED'],
  ]
  for (const [id, headers, status, code] of cases) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/journal/entries',
      headers: { ...headers, 'x-request-id': id },
      payload: {},
    })
    t.equal(res.statusCode, status)
    const done = lines.map((l) => JSON.parse(l)).find((l) => l.reqId === id && l.msg === 'request completed')
    t.match(done, { res: { statusCode: status, code } }, `${status} ${code}`)
  }
  lines.length = 0
  await app.inject({ method: 'GET', url: '/api/health/live', headers: { 'x-request-id': 'log-code-ok' } })
  const ok = lines.map((l) => JSON.parse(l)).find((l) => l.reqId === 'log-code-ok' && l.msg === 'request completed')
  t.same(ok.res, { statusCode: 200 }, 'a success carries no code')
})

t.test('objects logged by our own code have their secrets redacted, at the top level and nested', async (t) => {
  lines.length = 0
  app.log.info(
    {
      password: SECRETS.password,
      token: SECRETS.query,
      user: { email: 'a@example.com', passwordHash: '$argon2id$secret-hash', newPassword: SECRETS.password },
      headers: { cookie: SECRETS.cookie, authorization: SECRETS.bearer, accept: 'application/json' },
      gateway: { serverKey: 'server-key-secret', secretKey: 'sk_test_secret', clientSecret: 'client-secret-x' },
    },
    'an object with secrets',
  )
  const log = lines.join('')
  for (const secret of [...Object.values(SECRETS), 'secret-hash', 'server-key-secret', 'sk_test_secret', 'client-secret-x']) {
    t.notMatch(log, secret, `${secret} is redacted`)
  }
  t.match(log, /a@example\.com/, 'other fields stay')
  t.match(log, /application\/json/)
})

t.test('redactUrl hides sensitive query values and keeps the rest', async (t) => {
  t.equal(
    redactUrl('/api/auth/verify-email?token=abc&callbackURL=%2Fhome'),
    '/api/auth/verify-email?token=[Redacted]&callbackURL=%2Fhome',
  )
  t.equal(redactUrl('/api/health'), '/api/health')
  t.notMatch(redactUrl('/cb?STATE=s1&Code=c1&%74oken=t1'), /s1|c1|t1/, 'case and escapes do not hide a key')
  t.ok(redactUrl(`/x?${'a'.repeat(2000)}`).length <= 513, 'long URLs are shortened')
})
