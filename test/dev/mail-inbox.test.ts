// The development mail inbox at /api/dev/mail: in development every mail the service sends is kept
// (the last 100) and served as JSON and as a page whose links open; the log line only names it.
// Production and test have no such routes at all.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { DEV_MAIL_KEPT, type KeptMail } from '../../src/dev/mail-inbox.js'
import { buildTestApp, call, signUp, uniqueEmail, WEB_ORIGIN } from '../helpers/app.js'
import { logLines } from '../helpers/log-lines.js'
import { routeTable } from '../helpers/routes.js'

const DEV = { NODE_ENV: 'development' }
const log = logLines()
const app = await buildTestApp({ env: { ...DEV, LOG_LEVEL: 'info' }, deps: { logStream: log.stream } })
const lines = () => log.lines.map((l) => JSON.parse(l))

/** A kept mail as JSON. */
type Mail = Omit<KeptMail, 'sentAt'> & { sentAt: string }
const inbox = async (query = '') => (await app.inject({ method: 'GET', url: `/api/dev/mail${query}` })).json().mails as Mail[]

t.test('a mailed code and link are in the inbox, newest first, and the code signs in', async (t) => {
  const user = await signUp(app)
  await call(app, 'POST', '/api/auth/request-password-reset', { body: { email: user.email } })
  await app.settled()
  const res = await call(app, 'POST', '/api/auth/email-otp/send-verification-otp', {
    body: { email: user.email, type: 'sign-in' },
  })
  t.equal(res.statusCode, 200)
  await app.settled()

  const mails = await inbox(`?to=${encodeURIComponent(user.email.toUpperCase())}`)
  t.same(
    mails.map((m) => m.subject),
    ['Your sign-in code', 'Reset your password'],
    'newest first, only those to the address (any case)',
  )
  const [code, reset] = mails
  t.match(code, { to: user.email, codes: [/^\d{6}$/], links: [] })
  t.ok(Date.parse(code!.sentAt) <= Date.now(), 'sentAt is an ISO time')
  t.match(reset, { codes: [], links: [new RegExp(`^${WEB_ORIGIN}/reset-password\\?token=[A-Za-z0-9_-]{43}$`)] })
  t.ok(reset!.text.includes(reset!.links[0]!), 'the text is the whole mail')

  const one = await app.inject({ method: 'GET', url: `/api/dev/mail/${code!.id}` })
  t.same(one.json(), code, 'one mail by its id')
  const signIn = await call(app, 'POST', '/api/auth/sign-in/email-otp', { body: { email: user.email, otp: code!.codes[0] } })
  t.equal(signIn.statusCode, 200, 'the code from the inbox signs in')

  const logged = lines().filter((l) => l.mail?.to === user.email)
  t.ok(logged.length >= 2, 'each mail is logged')
  for (const line of logged) {
    t.same(Object.keys(line.mail).sort(), ['subject', 'to'], 'the log names the recipient and subject, not the text')
    t.equal(line.msg, 'mail kept in the development inbox: http://localhost:8787/api/dev/mail')
  }
  t.notOk(
    lines().some((l) => JSON.stringify(l).includes(code!.codes[0]!)),
    'no code in the log',
  )
})

t.test('the page shows every mail escaped, with only http(s) links to click', async (t) => {
  const to = uniqueEmail('page')
  await app.mailer.send({
    to,
    subject: '<script>alert(1)</script>',
    text: 'Open https://example.com/ok?a=1&b=2 or https://evil.example/"><img src=x onerror=alert(2)> or javascript:alert(3)\n',
  })
  const page = await app.inject({
    method: 'GET',
    url: `/api/dev/mail?to=${encodeURIComponent(to)}`,
    headers: { accept: 'text/html' },
  })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /^text\/html/)
  t.match(page.headers['content-security-policy'], /default-src 'none'.*frame-ancestors 'none'/)
  t.equal(page.headers['x-frame-options'], 'DENY')
  t.equal(page.headers['cache-control'], 'no-store')
  t.match(page.body, `it keeps the last ${DEV_MAIL_KEPT}`)
  t.notMatch(page.body, /<script|<img/i, 'no markup from the mail')
  t.match(page.body, '&lt;script&gt;alert(1)&lt;/script&gt;')
  t.match(page.body, '<a href="https://example.com/ok?a=1&amp;b=2" rel="noreferrer noopener">')
  t.match(page.body, '<a href="https://evil.example/" rel="noreferrer noopener">', 'a link ends where markup begins')
  t.notMatch(page.body, /href="javascript/i)
  t.equal((page.body.match(/<a href=/g) ?? []).length, 2, 'two links, no more')
  t.match((await inbox(`?to=${encodeURIComponent(to)}`))[0], {
    links: ['https://example.com/ok?a=1&b=2', 'https://evil.example/'],
  })
})

t.test('the inbox keeps the last mails only', async (t) => {
  const to = uniqueEmail('many')
  for (let i = 0; i < DEV_MAIL_KEPT + 5; i++) await app.mailer.send({ to, subject: `Mail ${i}`, text: `number ${i}\n` })
  const all = await inbox()
  t.equal(all.length, DEV_MAIL_KEPT)
  t.equal(all[0]!.subject, `Mail ${DEV_MAIL_KEPT + 4}`)
  t.equal(all.at(-1)!.subject, 'Mail 5')
  const oldest = Number(all.at(-1)!.id) - 1
  t.equal((await app.inject({ method: 'GET', url: `/api/dev/mail/${oldest}` })).statusCode, 404, 'a dropped mail is gone')
})

t.test('unhappy paths: bad input, unknown mail, another host, another origin', async (t) => {
  const expect = async (url: string, headers: Record<string, string>, status: number, code: string) => {
    const res = await app.inject({ method: 'GET', url, headers })
    t.same([res.statusCode, res.json().code], [status, code], `${url} ${JSON.stringify(headers)}`)
    return res
  }
  await expect('/api/dev/mail?secret=1', {}, 400, 'VALIDATION_ERROR')
  await expect(`/api/dev/mail?to=${'a'.repeat(300)}`, {}, 400, 'VALIDATION_ERROR')
  await expect('/api/dev/mail/abc', {}, 400, 'VALIDATION_ERROR')
  await expect('/api/dev/mail/0', {}, 400, 'VALIDATION_ERROR')
  await expect('/api/dev/mail/999999999', {}, 404, 'NOT_FOUND')
  // A site that rebinds its own name to 127.0.0.1 sends its own Host.
  const rebound = await expect('/api/dev/mail', { host: 'evil.example:8787' }, 403, 'FORBIDDEN')
  t.match(rebound.json().message, 'AUTH_URL')
  await expect('/api/dev/mail/1', { host: 'evil.example' }, 403, 'FORBIDDEN')
  for (const host of ['localhost:8787', '127.0.0.1:8787', '[::1]:8787']) {
    t.equal((await app.inject({ method: 'GET', url: '/api/dev/mail', headers: { host } })).statusCode, 200, host)
  }
  const foreign = await app.inject({ method: 'GET', url: '/api/dev/mail', headers: { origin: 'https://evil.example' } })
  t.equal(foreign.headers['access-control-allow-origin'], undefined, 'another origin cannot read it')
  for (const method of ['POST', 'DELETE'] as const) {
    t.equal((await call(app, method, '/api/dev/mail')).statusCode, 404, `${method} is no route`)
  }
})

t.test('a rebound page cannot name a loopback host in X-Forwarded-Host, even with loopback a trusted proxy', async (t) => {
  // After the rebinding the page's fetch is same-origin: it sets any header without a preflight,
  // and its connection comes from 127.0.0.1, which TRUST_PROXY=loopback trusts (a local proxy in
  // front of a development server, such as the front end's dev server).
  const proxied = await buildTestApp({ env: { ...DEV, TRUST_PROXY: 'loopback' } })
  for (const headers of [
    { host: 'evil.example:8787', 'x-forwarded-host': 'localhost' },
    { host: 'evil.example:8787', 'x-forwarded-host': '127.0.0.1:8787' },
  ]) {
    const res = await proxied.inject({ method: 'GET', url: '/api/dev/mail', headers, remoteAddress: '127.0.0.1' })
    t.same([res.statusCode, res.json().code], [403, 'FORBIDDEN'], JSON.stringify(headers))
  }
  const own = await proxied.inject({ method: 'GET', url: '/api/dev/mail', headers: { host: 'localhost:8787' } })
  t.equal(own.statusCode, 200, 'its own Host still reads it')
})

/** Every route under /api/dev of an app. */
const devRoutes = (app: FastifyInstance) => routeTable(app).filter((r) => r.pattern.startsWith('/api/dev'))

t.test('production and test serve none of the development routes', async (t) => {
  const walked = devRoutes(app)
  t.same([...new Set(walked.map((r) => `${r.method} ${r.pattern}`))].sort(), [
    'GET /api/dev/mail',
    'GET /api/dev/mail/:id',
    'HEAD /api/dev/mail',
    'HEAD /api/dev/mail/:id',
  ])
  t.ok(
    walked.every((r) => r.isPublic && !r.policy.cacheable),
    'public, never cached',
  )
  const devDoc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json()
  t.notOk(
    Object.keys(devDoc.paths).some((p) => p.startsWith('/api/dev')),
    'not in the OpenAPI document, even in development',
  )

  for (const NODE_ENV of ['production', 'test']) {
    // The API document is served in production only when asked for: asked for here, to read it.
    const other = await buildTestApp({ env: { NODE_ENV, API_DOCS: 'true' } })
    t.equal(other.mailer.inbox, undefined, `${NODE_ENV}: no mail is kept`)
    t.same(devRoutes(other), [], `${NODE_ENV}: no route under /api/dev`)
    for (const r of walked) {
      const res = await other.inject({ method: r.method as 'GET', url: r.url })
      t.equal(res.statusCode, 404, `${NODE_ENV}: ${r.method} ${r.url}`)
      if (r.method === 'GET') t.match(res.json(), { code: 'NOT_FOUND', message: /^Route GET/ })
    }
    const doc = (await other.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json()
    t.notOk(
      Object.keys(doc.paths).some((p) => p.startsWith('/api/dev')),
      `${NODE_ENV}: not in the OpenAPI document`,
    )
  }
})
