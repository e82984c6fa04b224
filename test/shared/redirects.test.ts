// Every place that takes a redirect target from a client (the reset link, verify-email's Location,
// the sign-in url, the identity provider's callback URLs, the payment return URL) refuses hostile
// values with 403 INVALID_CALLBACK_URL and afterwards uses only the URL a browser would resolve.
import t from 'tap'
import { resolveRedirect } from '../../src/shared/redirect.js'
import { buildTestApp, call, sessionCookieOf, signUp, WEB_ORIGIN } from '../helpers/app.js'
import { HOSTILE, label } from '../helpers/redirects.js'
import { linkIn, startSmtpServer } from '../helpers/smtp.js'

const API = 'http://localhost:8787'
const EXTRA = 'https://admin.example.com'

const smtp = await startSmtpServer()
const app = await buildTestApp({
  env: {
    SMTP_URL: smtp.url,
    AUTH_TRUSTED_ORIGIN: EXTRA,
    PAYMENT_GATEWAY: 'sandbox',
    IDP_CLIENT_ID: 'client',
    IDP_CLIENT_SECRET: 'secret',
    IDP_ISSUER: 'http://127.0.0.1:9/issuer',
  },
})
const rules = app.redirectRules

t.test('the one redirect function refuses every hostile value', async (t) => {
  for (const value of HOSTILE) {
    t.throws(() => resolveRedirect(value, rules, 'callbackURL'), { code: 'INVALID_CALLBACK_URL', status: 403 }, label(value))
  }
})

t.test('it resolves what it accepts against the web origin and returns only that', async (t) => {
  const cases: Array<[string, string]> = [
    ['/dashboard', `${WEB_ORIGIN}/dashboard`],
    ['/a/b?c=1#d', `${WEB_ORIGIN}/a/b?c=1#d`],
    ['settings', `${WEB_ORIGIN}/settings`],
    ['/%0d%0a/attacker.example', `${WEB_ORIGIN}/%0d%0a/attacker.example`],
    ['/ü', `${WEB_ORIGIN}/%C3%BC`],
    [`${EXTRA}/x`, `${EXTRA}/x`],
    [`${API}/api/auth/ok`, `${API}/api/auth/ok`],
    ['HTTP://LOCALHOST:3000/X', `${WEB_ORIGIN}/X`],
  ]
  for (const [value, resolved] of cases) t.equal(resolveRedirect(value, rules, 'callbackURL'), resolved, value)
})

t.test(
  'request-password-reset: a hostile redirectTo is 403 and no mail goes out; a relative one is mailed resolved',
  async (t) => {
    const user = await signUp(app)
    for (const redirectTo of HOSTILE) {
      const res = await call(app, 'POST', '/api/auth/request-password-reset', { body: { email: user.email, redirectTo } })
      t.same([res.statusCode, res.json().code], [403, 'INVALID_CALLBACK_URL'], label(redirectTo))
    }
    await app.settled()
    t.same(smtp.inbox.for(user.email), [], 'no mail for a refused request')
    const tokens = await app.db.selectFrom('verification').select('id').where('user_id', '=', user.id).execute()
    t.equal(tokens.length, 0, 'no token written either')

    const res = await call(app, 'POST', '/api/auth/request-password-reset', {
      body: { email: user.email, redirectTo: '/account/new-password' },
    })
    t.equal(res.statusCode, 200)
    const link = linkIn(await smtp.inbox.next(user.email))
    t.equal(`${link.origin}${link.pathname}`, `${WEB_ORIGIN}/account/new-password`)
    t.ok(link.searchParams.get('token'))
  },
)

t.test('verify-email: a hostile callbackURL is 403, never a Location; a relative one redirects resolved', async (t) => {
  for (const callbackURL of HOSTILE) {
    const res = await app.inject({
      method: 'GET',
      url: `/api/auth/verify-email?${new URLSearchParams({ token: 'x', callbackURL })}`,
    })
    t.same([res.statusCode, res.json().code], [403, 'INVALID_CALLBACK_URL'], label(callbackURL))
    t.equal(res.headers.location, undefined)
  }
  const res = await app.inject({
    method: 'GET',
    url: `/api/auth/verify-email?${new URLSearchParams({ token: 'unknown', callbackURL: '/welcome' })}`,
  })
  t.equal(res.statusCode, 302)
  t.equal(res.headers.location, `${WEB_ORIGIN}/welcome?error=invalid_token`)
})

t.test('send-verification-email and sign-up: a hostile callbackURL is 403 and nothing is written', async (t) => {
  const before = await app.db
    .selectFrom('user')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
  for (const callbackURL of HOSTILE.slice(0, 12)) {
    const send = await call(app, 'POST', '/api/auth/send-verification-email', {
      body: { email: 'nobody@example.com', callbackURL },
    })
    t.same([send.statusCode, send.json().code], [403, 'INVALID_CALLBACK_URL'])
    const signUpRes = await call(app, 'POST', '/api/auth/sign-up/email', {
      body: { name: 'X', email: `hostile-${Math.random()}@example.com`, password: 'a long enough password', callbackURL },
    })
    t.same([signUpRes.statusCode, signUpRes.json().code], [403, 'INVALID_CALLBACK_URL'])
    t.equal(sessionCookieOf(signUpRes), undefined)
  }
  const after = await app.db
    .selectFrom('user')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
  t.equal(Number(after.n), Number(before.n), 'no account was created')
})

t.test('sign-in: a hostile callbackURL is 403 without a session; a relative one comes back resolved', async (t) => {
  const user = await signUp(app)
  for (const callbackURL of HOSTILE) {
    const res = await call(app, 'POST', '/api/auth/sign-in/email', {
      body: { email: user.email, password: user.password, callbackURL },
    })
    t.same([res.statusCode, res.json().code], [403, 'INVALID_CALLBACK_URL'], label(callbackURL))
    t.equal(sessionCookieOf(res), undefined)
  }
  const res = await call(app, 'POST', '/api/auth/sign-in/email', {
    body: { email: user.email, password: user.password, callbackURL: '/home' },
  })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { redirect: true, url: `${WEB_ORIGIN}/home` })
})

t.test('identity provider: hostile start URLs are 403, and a flow cookie holding one is refused without a 500', async (t) => {
  for (const field of ['callbackURL', 'errorCallbackURL', 'newUserCallbackURL']) {
    for (const value of HOSTILE) {
      const get = await app.inject({ method: 'GET', url: `/api/auth/sign-in/idp?${new URLSearchParams({ [field]: value })}` })
      t.same([get.statusCode, get.json().code], [403, 'INVALID_CALLBACK_URL'], `GET ${field}=${label(value)}`)
      const post = await call(app, 'POST', '/api/auth/sign-in/social', { body: { provider: 'idp', [field]: value } })
      t.same([post.statusCode, post.json().code], [403, 'INVALID_CALLBACK_URL'], `POST ${field}=${label(value)}`)
    }
  }
  // A flow cookie signed by this service (an older version, or another rule) holding a value that
  // would break the Location header: judged again at the callback, before any session exists.
  const sessionsBefore = await app.db.selectFrom('session').select('id').execute()
  for (const callbackURL of ['http://localhost:3000/\r\nSet-Cookie: x=y', 'https://attacker.example/']) {
    const flow = {
      state: 'state-1',
      codeVerifier: 'v',
      nonce: 'n',
      callbackURL,
      errorCallbackURL: callbackURL,
      newUserCallbackURL: callbackURL,
      expiresAt: Date.now() + 60_000,
    }
    const cookie = `idp_flow=${app.signCookie(Buffer.from(JSON.stringify(flow)).toString('base64url'))}`
    const res = await app.inject({ method: 'GET', url: '/api/auth/callback/idp?code=c&state=state-1', headers: { cookie } })
    t.equal(res.statusCode, 302, label(callbackURL))
    t.equal(res.headers.location, `${WEB_ORIGIN}/auth/error?error=state_mismatch`)
  }
  const sessionsAfter = await app.db.selectFrom('session').select('id').execute()
  t.equal(sessionsAfter.length, sessionsBefore.length, 'no session row was left behind')
})

t.test(
  'payment checkout: a hostile returnUrl is 403 and no payment is recorded; the gateway gets the resolved URL',
  async (t) => {
    const user = await signUp(app)
    for (const returnUrl of HOSTILE) {
      const res = await call(app, 'POST', '/api/v1/payments/checkout', {
        cookie: user.cookie,
        body: { product: 'premium_month', returnUrl },
      })
      t.same([res.statusCode, res.json().code], [403, 'INVALID_CALLBACK_URL'], label(returnUrl))
    }
    const none = await app.db.selectFrom('payment').select('id').where('user_id', '=', user.id).execute()
    t.equal(none.length, 0)
    const res = await call(app, 'POST', '/api/v1/payments/checkout', {
      cookie: user.cookie,
      body: { product: 'premium_month', returnUrl: '/billing/done' },
    })
    t.equal(res.statusCode, 201)
    const row = await app.db.selectFrom('payment').select('return_url').where('user_id', '=', user.id).executeTakeFirstOrThrow()
    t.equal(row.return_url, `${WEB_ORIGIN}/billing/done`, 'only the resolved URL is stored')
  },
)
