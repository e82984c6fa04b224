// The whole redirect dance against a real OpenID Connect provider (oidc-provider) on loopback,
// over real sockets: the API listens, the provider listens, a fetch-driven browser goes between.
import t from 'tap'
import { buildTestApp, call, movableClock, signUp, uniqueEmail, WEB_ORIGIN } from '../../helpers/app.js'
import { Browser, CLIENT_ID, CLIENT_SECRET, drive, driveUntilCallback, startOidcProvider } from '../../helpers/idp.js'
import { freePort } from '../../helpers/port.js'

const OWNER_EMAIL = `owner-${process.pid}-${Date.now()}@example.com`
const apiPort = await freePort()
const API = `http://127.0.0.1:${apiPort}`
const idp = await startOidcProvider(`${API}/api/auth/callback/idp`)
const clock = movableClock()
const app = await buildTestApp({
  env: {
    AUTH_URL: API,
    BOOTSTRAP_OWNER_EMAIL: OWNER_EMAIL,
    IDP_ISSUER: idp.issuer,
    IDP_CLIENT_ID: CLIENT_ID,
    IDP_CLIENT_SECRET: CLIENT_SECRET,
  },
  deps: { clock },
})
await app.listen({ port: apiPort, host: '127.0.0.1' })

const startUrl = (query: Record<string, string> = {}) =>
  `${API}/api/auth/sign-in/idp${Object.keys(query).length ? `?${new URLSearchParams(query)}` : ''}`

const dance = (browser: Browser, login: string, query: Record<string, string> = {}, extra: { abort?: boolean } = {}) =>
  drive(browser, startUrl(query), { api: API, provider: idp.issuer, login, ...extra })

async function sessionOf(browser: Browser) {
  const res = await browser.request(`${API}/api/auth/get-session`)
  return (await res.json()) as {
    session: { userId: string }
    user: { id: string; email: string; emailVerified: boolean; role: string; name: string; image: string | null }
  } | null
}

const sessionCount = async (userId: string) =>
  (await app.db.selectFrom('session').select('id').where('user_id', '=', userId).execute()).length

let subCounter = 0
const newSubject = (account: { email: string; email_verified: boolean; name?: string; picture?: string }) => {
  const sub = `sub-${process.pid}-${subCounter++}`
  idp.accounts.set(sub, account)
  return sub
}

t.test('a first sign-in creates a member and lands on the callback URL with a session', async (t) => {
  const email = uniqueEmail('Idp-New').replace('idp-new', 'IDP-New')
  const sub = newSubject({ email, email_verified: true, name: 'Ada Provider', picture: 'https://pics.example.com/ada.png' })
  const browser = new Browser()

  const first = await browser.request(startUrl({ callbackURL: `${WEB_ORIGIN}/dashboard` }))
  t.equal(first.status, 302)
  const authorize = new URL(first.headers.get('location')!)
  t.equal(authorize.origin, idp.issuer)
  t.equal(authorize.searchParams.get('code_challenge_method'), 'S256')
  t.ok(authorize.searchParams.get('code_challenge'))
  t.ok(authorize.searchParams.get('state'))
  t.ok(authorize.searchParams.get('nonce'))
  t.equal(authorize.searchParams.get('redirect_uri'), `${API}/api/auth/callback/idp`)
  t.match(authorize.searchParams.get('scope'), /openid/)
  const flowCookie = first.headers.getSetCookie().find((c) => c.startsWith('idp_flow='))!
  t.match(flowCookie, /HttpOnly/i)
  t.match(flowCookie, /SameSite=Lax/i)
  t.match(flowCookie, /Path=\/;/)
  t.match(flowCookie, /Max-Age=600/)

  const result = await drive(browser, authorize.toString(), { api: API, provider: idp.issuer, login: sub })
  t.equal(result.landed.toString(), `${WEB_ORIGIN}/dashboard`)
  t.equal(result.callbackResponse!.status, 302)
  t.match(result.callbackResponse!.headers.getSetCookie().join('\n'), /better-auth\.session_token=[^;]+; .*HttpOnly/i)
  t.equal(browser.cookie(API, 'idp_flow'), undefined, 'the flow cookie is spent')

  const session = await sessionOf(browser)
  t.ok(session)
  t.equal(session!.user.email, email.toLowerCase())
  t.equal(session!.user.emailVerified, true)
  t.equal(session!.user.role, 'member')
  t.equal(session!.user.name, 'Ada Provider')
  t.equal(session!.user.image, 'https://pics.example.com/ada.png')
  const account = await app.db
    .selectFrom('account')
    .selectAll()
    .where('provider_id', '=', 'idp')
    .where('account_id', '=', sub)
    .executeTakeFirst()
  t.equal(account?.user_id, session!.user.id)
  t.equal(account?.password_hash, null)
  const audit = await app.db.selectFrom('audit_event').select('action').where('actor_id', '=', session!.user.id).execute()
  t.ok(audit.some((a) => a.action === 'auth.sign_in'))
  t.ok(audit.some((a) => a.action === 'auth.sign_up'))
})

t.test('a new user goes to newUserCallbackURL, a returning one to callbackURL', async (t) => {
  const sub = newSubject({ email: uniqueEmail('idp-nu'), email_verified: true })
  const query = { callbackURL: '/home', newUserCallbackURL: `${WEB_ORIGIN}/welcome` }
  const first = await dance(new Browser(), sub, query)
  t.equal(first.landed.toString(), `${WEB_ORIGIN}/welcome`)
  const again = await dance(new Browser(), sub, query)
  t.equal(again.landed.toString(), `${WEB_ORIGIN}/home`, 'a relative callbackURL is a page of the web front end')
})

t.test('without callback URLs the user lands on the web origin', async (t) => {
  const sub = newSubject({ email: uniqueEmail('idp-default'), email_verified: true })
  const result = await dance(new Browser(), sub)
  t.equal(result.landed.toString(), `${WEB_ORIGIN}/`)
})

t.test('the same subject is the same user even after its email changed at the provider', async (t) => {
  const email = uniqueEmail('idp-returning')
  const sub = newSubject({ email, email_verified: true })
  const b1 = new Browser()
  await dance(b1, sub)
  const firstUser = (await sessionOf(b1))!.user

  idp.accounts.set(sub, { email: uniqueEmail('idp-changed'), email_verified: true })
  const b2 = new Browser()
  await dance(b2, sub)
  const second = (await sessionOf(b2))!
  t.equal(second.user.id, firstUser.id)
  t.equal(second.user.email, email, 'our copy of the email is not rewritten by the provider')
  const users = await app.db.selectFrom('account').select('user_id').where('account_id', '=', sub).execute()
  t.equal(users.length, 1)
})

t.test('a verified provider email links to the existing password account', async (t) => {
  const existing = await signUp(app)
  // The owner proved the address earlier, so the password is theirs and stays.
  await app.db.updateTable('user').set({ email_verified: true }).where('id', '=', existing.id).execute()
  const sub = newSubject({ email: existing.email.toUpperCase(), email_verified: true })
  const browser = new Browser()
  const result = await dance(browser, sub)
  t.equal(result.landed.toString(), `${WEB_ORIGIN}/`)
  const session = (await sessionOf(browser))!
  t.equal(session.user.id, existing.id)
  t.equal(session.user.emailVerified, true, 'the provider vouched for the address')
  const accounts = await app.db.selectFrom('account').select(['provider_id']).where('user_id', '=', existing.id).execute()
  t.same(accounts.map((a) => a.provider_id).sort(), ['credential', 'idp'])
  const linked = await app.db.selectFrom('audit_event').select('action').where('target_id', '=', existing.id).execute()
  t.ok(linked.some((a) => a.action === 'auth.idp.account_linked'))
  // The password still works: linking added a way in, it took none away.
  const pw = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: existing.email, password: existing.password } })
  t.equal(pw.statusCode, 200)
})

t.test(
  "an attacker who registered the victim's address first loses the password when the victim signs in via the provider",
  async (t) => {
    // The attacker signs up with the victim's address and never verifies it.
    const attacker = await signUp(app)
    t.equal(await sessionCount(attacker.id), 1)
    const reset = await call(app, 'POST', '/api/auth/request-password-reset', { body: { email: attacker.email } })
    t.ok(reset.statusCode < 500)
    await app.settled() // the token is written after the reply
    const asked = await app.db.selectFrom('verification').select('id').where('user_id', '=', attacker.id).execute()
    t.ok(asked.length >= 1, 'the attacker holds a pending emailed link')

    const sub = newSubject({ email: attacker.email, email_verified: true })
    const victim = new Browser()
    await dance(victim, sub)
    const session = (await sessionOf(victim))!
    t.equal(session.user.id, attacker.id, "the address is the victim's account now")
    t.equal(session.user.emailVerified, true)

    const accounts = await app.db
      .selectFrom('account')
      .select(['provider_id', 'account_id'])
      .where('user_id', '=', attacker.id)
      .execute()
    t.same(accounts, [{ provider_id: 'idp', account_id: sub }], 'only the provider link remains')
    const pending = await app.db.selectFrom('verification').select('purpose').where('user_id', '=', attacker.id).execute()
    // What is left was mailed to the victim, after the claim: the security notices of the take-back,
    // of the link and of the sign-in.
    t.same(
      pending.map((r) => r.purpose),
      ['security-notice', 'security-notice', 'security-notice'],
      'no emailed link asked for by the attacker survives',
    )
    t.equal(await sessionCount(attacker.id), 1, "only the victim's new session")

    const pw = await call(app, 'POST', '/api/auth/sign-in/email', {
      body: { email: attacker.email, password: attacker.password },
    })
    t.equal(pw.statusCode, 401, "the attacker's password no longer signs in")
    t.equal(pw.json().code, 'INVALID_EMAIL_OR_PASSWORD')
    const old = await call(app, 'GET', '/api/auth/get-session', { cookie: attacker.cookie })
    t.equal(old.json(), null, "the attacker's session ended")

    const audit = await app.db
      .selectFrom('audit_event')
      .select(['action', 'details'])
      .where('target_id', '=', attacker.id)
      .where('action', '=', 'auth.idp.unverified_account_claimed')
      .execute()
    t.equal(audit.length, 1)
    t.match(audit[0]!.details, { removedAccounts: ['credential'], sessionsRevoked: 1 })
    t.notMatch(JSON.stringify(audit[0]!.details), /hash|password_hash|\$argon/, 'no secret in the audit details')
  },
)

t.test('an unverified provider email does not link to an existing user', async (t) => {
  const existing = await signUp(app)
  const sub = newSubject({ email: existing.email, email_verified: false })
  const browser = new Browser()
  const result = await dance(browser, sub, { errorCallbackURL: `${WEB_ORIGIN}/oops?from=idp` })
  t.equal(result.landed.origin + result.landed.pathname, `${WEB_ORIGIN}/oops`)
  t.equal(result.landed.searchParams.get('error'), 'email_not_verified')
  t.equal(result.landed.searchParams.get('from'), 'idp')
  t.equal(await sessionOf(browser), null)
  t.match(result.callbackResponse!.headers.getSetCookie().join('\n'), /^(?!.*session_token=[^;])/s, 'no session cookie')
  const rows = await app.db.selectFrom('account').select('id').where('account_id', '=', sub).execute()
  t.equal(rows.length, 0, 'nothing linked')
  t.equal(await sessionCount(existing.id), 1, 'only the sign-up session')
})

t.test('an unverified email that nobody uses yet creates an unverified user', async (t) => {
  const sub = newSubject({ email: uniqueEmail('idp-unverified'), email_verified: false })
  const browser = new Browser()
  await dance(browser, sub)
  const session = (await sessionOf(browser))!
  t.equal(session.user.emailVerified, false)
})

t.test('BOOTSTRAP_OWNER_EMAIL becomes owner only on a provider-verified email', async (t) => {
  const unverified = new Browser()
  await dance(unverified, newSubject({ email: OWNER_EMAIL, email_verified: false }))
  const first = (await sessionOf(unverified))!
  t.equal(first.user.role, 'member', 'an unverified claim to the address proves nothing')

  const verified = new Browser()
  await dance(verified, newSubject({ email: OWNER_EMAIL, email_verified: true }))
  const second = (await sessionOf(verified))!
  t.equal(second.user.id, first.user.id, 'the verified subject links to the same user')
  t.equal(second.user.role, 'owner')
  t.equal(await sessionOf(unverified), null, 'sessions from the unproven address were ended')
})

t.test('BOOTSTRAP_OWNER_EMAIL: a provider sign-in does not promote an account whose password it did not replace', async (t) => {
  // The address is free again: the owner of the test above moves to another one.
  await app.db
    .updateTable('user')
    .set({ email: uniqueEmail('former-owner') })
    .where('email', '=', OWNER_EMAIL)
    .execute()
  // Whoever signed up first chose the password; the real owner then opened the sign-up's mail.
  const squatter = await signUp(app, { email: OWNER_EMAIL })
  await app.db.updateTable('user').set({ email_verified: true }).where('id', '=', squatter.id).execute()

  const sub = newSubject({ email: OWNER_EMAIL, email_verified: true })
  const browser = new Browser()
  await dance(browser, sub)
  const linked = (await sessionOf(browser))!
  t.equal(linked.user.id, squatter.id, 'the provider links to the verified account')
  t.equal(linked.user.role, 'member', 'which keeps a password the owner may not hold: not promoted')
  await dance(browser, sub)
  t.equal((await sessionOf(browser))!.user.role, 'member', 'nor on a later sign-in through the link')
  const accounts = await app.db.selectFrom('account').select('provider_id').where('user_id', '=', squatter.id).execute()
  t.same(accounts.map((a) => a.provider_id).sort(), ['credential', 'idp'])
})

t.test('the provider answering access_denied ends at the error URL without a session', async (t) => {
  const sub = newSubject({ email: uniqueEmail('idp-denied'), email_verified: true })
  const browser = new Browser()
  const result = await dance(browser, sub, {}, { abort: true })
  t.equal(result.landed.origin + result.landed.pathname, `${WEB_ORIGIN}/auth/error`)
  t.equal(result.landed.searchParams.get('error'), 'access_denied')
  t.equal(await sessionOf(browser), null)
  t.equal(browser.cookie(API, 'idp_flow'), undefined)
})

t.test('a tampered state is state_mismatch and the code is never redeemed', async (t) => {
  const sub = newSubject({ email: uniqueEmail('idp-tamper'), email_verified: true })
  const browser = new Browser()
  // Stop at the callback: drive until the provider sends the browser back, then alter state.
  const first = await browser.request(startUrl())
  const authorize = first.headers.get('location')!
  const toProvider = await driveUntilCallback(browser, authorize, { api: API, login: sub })
  const tampered = new URL(toProvider)
  tampered.searchParams.set('state', `${tampered.searchParams.get('state')}x`)
  const res = await browser.request(tampered.toString())
  t.equal(res.status, 302)
  const landed = new URL(res.headers.get('location')!)
  t.equal(landed.searchParams.get('error'), 'state_mismatch')
  t.equal(await sessionOf(browser), null)
  // The flow is single use: the genuine state no longer works either.
  const genuine = await browser.request(toProvider)
  t.equal(new URL(genuine.headers.get('location')!).searchParams.get('error'), 'state_mismatch')
  t.equal(await sessionOf(browser), null)
})

t.test('a callback without the flow cookie (forged or from another browser) is state_mismatch', async (t) => {
  const sub = newSubject({ email: uniqueEmail('idp-csrf'), email_verified: true })
  const victim = new Browser()
  const attacker = new Browser()
  const first = await attacker.request(startUrl())
  const callback = await driveUntilCallback(attacker, first.headers.get('location')!, { api: API, login: sub })
  const res = await victim.request(callback)
  t.equal(new URL(res.headers.get('location')!).searchParams.get('error'), 'state_mismatch')
  t.equal(await sessionOf(victim), null)
  // A flow cookie with a forged signature is no flow cookie.
  victim.setCookie(API, 'idp_flow', attacker.cookie(API, 'idp_flow')!.replace(/\.[^.]+$/, '.forged'), '/api/auth')
  const forged = await victim.request(callback)
  t.equal(new URL(forged.headers.get('location')!).searchParams.get('error'), 'state_mismatch')
})

t.test('a flow older than ten minutes is state_mismatch', async (t) => {
  const sub = newSubject({ email: uniqueEmail('idp-expired'), email_verified: true })
  const browser = new Browser()
  const first = await browser.request(startUrl({ errorCallbackURL: '/signin-failed' }))
  const callback = await driveUntilCallback(browser, first.headers.get('location')!, { api: API, login: sub })
  clock.set(11 * 60 * 1000)
  t.teardown(() => {
    clock.set(0)
  })
  const res = await browser.request(callback)
  const landed = new URL(res.headers.get('location')!)
  t.equal(landed.origin + landed.pathname, `${WEB_ORIGIN}/signin-failed`)
  t.equal(landed.searchParams.get('error'), 'state_mismatch')
  t.equal(await sessionOf(browser), null)
})

t.test('a replayed code is invalid_code', async (t) => {
  const sub = newSubject({ email: uniqueEmail('idp-replay'), email_verified: true })
  const browser = new Browser()
  const done = await dance(browser, sub)
  const usedCode = new URL(done.callbackUrl!).searchParams.get('code')!
  const userId = (await sessionOf(browser))!.user.id
  t.equal(await sessionCount(userId), 1)

  // An attacker who saw the code starts a flow of their own and feeds it the used code.
  const attacker = new Browser()
  const start = await attacker.request(startUrl())
  const state = new URL(start.headers.get('location')!).searchParams.get('state')!
  const res = await attacker.request(`${API}/api/auth/callback/idp?${new URLSearchParams({ code: usedCode, state })}`)
  t.equal(new URL(res.headers.get('location')!).searchParams.get('error'), 'invalid_code')
  t.equal(await sessionOf(attacker), null)
  t.equal(await sessionCount(userId), 1, 'no second session')
})

t.test('a made-up code is invalid_code', async (t) => {
  const browser = new Browser()
  const start = await browser.request(startUrl())
  const state = new URL(start.headers.get('location')!).searchParams.get('state')!
  const res = await browser.request(`${API}/api/auth/callback/idp?${new URLSearchParams({ code: 'not-a-code', state })}`)
  t.equal(new URL(res.headers.get('location')!).searchParams.get('error'), 'invalid_code')
})

t.test('a callback with neither code nor error is invalid_code', async (t) => {
  const browser = new Browser()
  const start = await browser.request(startUrl())
  const state = new URL(start.headers.get('location')!).searchParams.get('state')!
  const res = await browser.request(`${API}/api/auth/callback/idp?state=${state}`)
  t.equal(new URL(res.headers.get('location')!).searchParams.get('error'), 'invalid_code')
})

t.test('callback URLs on an untrusted origin are refused before any redirect', async (t) => {
  for (const key of ['callbackURL', 'errorCallbackURL', 'newUserCallbackURL']) {
    for (const bad of ['https://evil.example.com/x', '//evil.example.com/x', 'javascript:alert(1)', '/\\evil.example.com']) {
      const res = await fetch(startUrl({ [key]: bad }), { redirect: 'manual' })
      t.equal(res.status, 403, `${key}=${bad}`)
      t.match(await res.json(), { code: 'INVALID_CALLBACK_URL', status: 403 })
      t.equal(res.headers.getSetCookie().length, 0, 'no flow cookie')
    }
  }
  const social = await call(app, 'POST', '/api/auth/sign-in/social', {
    body: { provider: 'idp', callbackURL: 'https://evil.example.com/' },
  })
  t.equal(social.statusCode, 403)
  t.equal(social.json().code, 'INVALID_CALLBACK_URL')
})

t.test('unknown query keys on the sign-in start are a 400', async (t) => {
  const res = await fetch(`${startUrl()}?role=admin`, { redirect: 'manual' })
  t.equal(res.status, 400)
  t.equal((await res.json()).code, 'VALIDATION_ERROR')
})

t.test("sign-in/social answers the provider URL for better-auth's client", async (t) => {
  const res = await call(app, 'POST', '/api/auth/sign-in/social', { body: { provider: 'idp', callbackURL: '/after' } })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.equal(body.redirect, true)
  t.equal(new URL(body.url).origin, idp.issuer)
  t.ok(new URL(body.url).searchParams.get('nonce'))
  t.ok(res.cookies.find((c) => c.name === 'idp_flow'))

  const quiet = await call(app, 'POST', '/api/auth/sign-in/social', { body: { provider: 'idp', disableRedirect: true } })
  t.equal(quiet.json().redirect, false)

  // The flow it starts completes like the GET one (the fetch browser carries the cookie it set).
  const sub = newSubject({ email: uniqueEmail('idp-social'), email_verified: true })
  const browser = new Browser()
  const json = await browser.request(`${API}/api/auth/sign-in/social`, {
    json: { provider: 'idp', callbackURL: `${WEB_ORIGIN}/from-social` },
    headers: { origin: WEB_ORIGIN },
  })
  const result = await drive(browser, (await json.json()).url, { api: API, provider: idp.issuer, login: sub })
  t.equal(result.landed.toString(), `${WEB_ORIGIN}/from-social`)
  t.ok(await sessionOf(browser))
})

t.test('sign-in/social with another provider is 404 PROVIDER_NOT_FOUND', async (t) => {
  const res = await call(app, 'POST', '/api/auth/sign-in/social', { body: { provider: 'github' } })
  t.equal(res.statusCode, 404)
  t.match(res.json(), { code: 'PROVIDER_NOT_FOUND', status: 404 })
})

t.test('sign-in/social rejects unknown keys and a missing provider', async (t) => {
  const extra = await call(app, 'POST', '/api/auth/sign-in/social', { body: { provider: 'idp', role: 'owner' } })
  t.equal(extra.statusCode, 400)
  t.equal(extra.json().code, 'VALIDATION_ERROR')
  const missing = await call(app, 'POST', '/api/auth/sign-in/social', { body: {} })
  t.equal(missing.statusCode, 400)
  const huge = await call(app, 'POST', '/api/auth/sign-in/social', {
    body: { provider: 'idp', callbackURL: `/${'a'.repeat(3000)}` },
  })
  t.equal(huge.statusCode, 400)
})

t.test('sign-in/social from an untrusted origin is refused', async (t) => {
  const res = await call(app, 'POST', '/api/auth/sign-in/social', {
    body: { provider: 'idp' },
    headers: { origin: 'https://evil.example.com' },
  })
  t.equal(res.statusCode, 403)
  t.equal(res.json().code, 'INVALID_ORIGIN')
})
