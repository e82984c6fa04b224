// Guests (issue 38) in better-auth 1.6's anonymous plugin's wire format, driven by better-auth's own
// client with anonymousClient() (and the plugins of each way in) over a real socket: a guest gets a
// session at once, uses the member's operations within the free plan, never payments, two-factor,
// passkeys or admin; when its browser signs up or signs in, by any way in, what it made moves to the
// account in the session's transaction (never its consents, and only in the browser that made the
// guest: a planted guest cookie moves nothing), and a guest nobody can reach is purged.
import { passkeyClient } from '@better-auth/passkey/client'
import { createAuthClient } from 'better-auth/client'
import { anonymousClient, emailOTPClient, jwtClient, magicLinkClient, twoFactorClient } from 'better-auth/client/plugins'
import { decodeJwt } from 'jose'
import t, { type Test } from 'tap'
import { maintain } from '../../src/maintenance/purge.js'
import type { Clock } from '../../src/shared/clock.js'
import { buildTestApp, call, signUp, uniqueEmail, WEB_ORIGIN } from '../helpers/app.js'
import { cookieJarFetch } from '../helpers/auth-client.js'
import { SoftAuthenticator } from '../helpers/authenticator.js'
import { auditEvents } from '../helpers/expect.js'
import { Browser, drive, driveUntilCallback, idpEnv, startOidcProvider } from '../helpers/idp.js'
import { registerPasskey } from '../helpers/passkey.js'
import { freePort } from '../helpers/port.js'
import { errorCodeOf, routeTable } from '../helpers/routes.js'
import { linkIn, startSmtpServer } from '../helpers/smtp.js'
import { codeAt, enableTotp } from '../helpers/two-factor.js'

const DAY = 24 * 60 * 60 * 1000
const PASSWORD = 'correct horse battery staple'
let offset = 0
const clock: Clock = { now: () => new Date(Date.now() + offset) }
const smtp = await startSmtpServer()
const apiPort = await freePort()
const API = `http://127.0.0.1:${apiPort}`
const idp = await startOidcProvider(`${API}/api/auth/callback/idp`)
const app = await buildTestApp({
  deps: { clock },
  env: {
    AUTH_URL: API,
    SMTP_URL: smtp.url,
    ...idpEnv(idp.issuer),
    GUEST_TTL_DAYS: '2',
  },
})
await app.listen({ port: apiPort, host: '127.0.0.1' })

/** A browser on the web origin: better-auth's client with the guests' plugin and each way in. */
function browser() {
  const { jar, fetch } = cookieJarFetch('follow')
  const client = createAuthClient({
    baseURL: API,
    plugins: [anonymousClient(), jwtClient(), emailOTPClient(), magicLinkClient(), passkeyClient(), twoFactorClient()],
    fetchOptions: { customFetchImpl: fetch },
  })
  const cookie = () => `better-auth.session_token=${jar.get('better-auth.session_token')}`
  /** A business call as the web app makes it, with this browser's cookie. */
  const send = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${API}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, json: text ? JSON.parse(text) : null }
  }
  return { client, jar, cookie, send, fetch }
}
type TestBrowser = ReturnType<typeof browser>

const RESULT = {
  partner: {
    name: 'Bima',
    birthDate: '1992-11-09',
    birthTime: '07:45',
    birthPlace: { name: 'Yogyakarta', latitude: -7.8, longitude: 110.36 },
  },
  systems: ['bazi'],
  score: 71,
  summary: { headline: 'Warm and steady' },
}

interface GuestMade {
  guestId: string
  entryId: string
  resultId: string
  consentId: string
}

/** Signs the browser in as a guest and makes one of each: a journal entry, a result, a consent, an AI message. */
async function guestMakes(t: Test, b: { send: TestBrowser['send'] }, signIn?: () => Promise<string>): Promise<GuestMade> {
  const guestId = signIn ? await signIn() : await signInAsGuest(b as TestBrowser)
  const entry = await b.send('POST', '/api/v1/journal/entries', { content: 'A guest day', mood: 4 })
  t.equal(entry.status, 201, 'a guest writes a journal entry')
  const result = await b.send('POST', '/api/v1/compatibility/results', RESULT)
  t.equal(result.status, 201, 'a guest keeps a compatibility result')
  const consent = await b.send('POST', '/api/v1/consent', { type: 'marketing', version: '1', granted: true })
  t.equal(consent.status, 201, 'a guest records a consent')
  const usage = await b.send('POST', '/api/v1/usage/aiMessages/increment', { amount: 2 })
  t.equal(usage.status, 200, 'a guest counts AI messages')
  return { guestId, entryId: entry.json.id, resultId: result.json.id, consentId: consent.json.id }
}

/** A business call from a provider-capable Browser, as the web app makes it. */
const sendIn = (b: Browser) => async (method: string, path: string, body?: unknown) => {
  const res = await b.request(`${API}${path}`, { method, json: body, headers: { origin: WEB_ORIGIN } })
  const text = await res.text()
  return { status: res.status, json: text ? JSON.parse(text) : null }
}

async function signInAsGuest(b: TestBrowser): Promise<string> {
  const res = await b.client.signIn.anonymous()
  if (res.error) throw new Error(JSON.stringify(res.error))
  return res.data!.user.id
}

const ownerOf = async (table: 'journal_entry' | 'compatibility_result' | 'consent_record', id: string) =>
  (await app.db.selectFrom(table).select('user_id').where('id', '=', id).executeTakeFirst())?.user_id
const usageOf = async (userId: string, metric: string) =>
  (
    await app.db.selectFrom('usage_counter').select('used').where('user_id', '=', userId).where('metric', '=', metric).execute()
  ).reduce((n, r) => n + r.used, 0)
const userExists = async (id: string) =>
  (await app.db.selectFrom('user').select('id').where('id', '=', id).executeTakeFirst()) !== undefined

/** Everything the guest made is the account's, counted once; the guest and its sessions are gone. */
async function adopted(
  t: Test,
  made: GuestMade,
  accountId: string,
  b: { send: TestBrowser['send'] },
  before = { journalEntries: 0, aiMessages: 0 },
) {
  t.equal(await ownerOf('journal_entry', made.entryId), accountId, 'the entry is the account’s')
  t.equal(await ownerOf('compatibility_result', made.resultId), accountId, 'the result is the account’s')
  t.equal(await ownerOf('consent_record', made.consentId), undefined, 'the guest’s consent is not the account holder’s: it goes')
  t.equal(await usageOf(accountId, 'journalEntries'), before.journalEntries + 1, 'the entry counted once')
  t.equal(await usageOf(accountId, 'aiMessages'), before.aiMessages + 2, 'the AI messages counted once')
  t.notOk(await userExists(made.guestId), 'the guest is gone')
  t.equal(
    (await app.db.selectFrom('session').select('id').where('user_id', '=', made.guestId).execute()).length,
    0,
    'its sessions too',
  )
  const [event] = await auditEvents(app.db, { action: 'auth.guest_adopted', actorId: accountId })
  t.match(event?.details, { guestId: made.guestId, entries: 1, results: 1 })
  t.notOk(event?.details && 'consents' in event.details, 'no consent moved')
  // The owner sees it in the account's security activity.
  const activity = await b.send('GET', '/api/v1/me/security-events')
  t.ok(
    activity.json.items.some(
      (e: { kind: string; byAdministrator: boolean }) => e.kind === 'guest_data_adopted' && !e.byAdministrator,
    ),
    'in the security activity',
  )
}

/** Nothing moved: the guest still holds what it made. */
async function untouched(t: Test, made: GuestMade) {
  t.ok(await userExists(made.guestId), 'the guest is still there')
  t.equal(await ownerOf('journal_entry', made.entryId), made.guestId, 'its entry is still its own')
  t.equal(await ownerOf('compatibility_result', made.resultId), made.guestId, 'its result too')
}

t.test('sign-in/anonymous makes a guest and its session; a guest signed in already gets better-auth’s 400', async (t) => {
  const b = browser()
  const res = await b.client.signIn.anonymous()
  t.equal(res.error, null, JSON.stringify(res.error))
  t.match(res.data?.user, { isAnonymous: true, emailVerified: false, role: 'member', plan: 'free', name: 'Anonymous' })
  t.match(res.data?.user.email, /@guest\.invalid$/, 'an address in a domain that receives no mail')
  const session = await b.client.getSession()
  t.equal(session.data?.user.isAnonymous, true)
  t.notOk(b.jar.has('better-auth.last_used_login_method'), 'a guest is no way in to remember')
  const again = await b.client.signIn.anonymous()
  t.match(again.error, { status: 400, code: 'ANONYMOUS_USERS_CANNOT_SIGN_IN_AGAIN_ANONYMOUSLY' })
  t.equal((await b.client.getSession()).data?.user.id, res.data!.user.id, 'still the same guest')

  // A guest's token for the AI backend says it is one.
  const token = await b.client.$fetch<{ token: string }>('/token', { method: 'GET' })
  t.match(decodeJwt(token.data!.token), { sub: res.data!.user.id, isAnonymous: true, plan: 'free' })

  // A member who asks for a guest ends their session, as every sign-in does.
  const member = await signUp(app)
  const asMember = await call(app, 'POST', '/api/auth/sign-in/anonymous', { cookie: member.cookie, body: {} })
  t.equal(asMember.statusCode, 200)
  t.equal((await call(app, 'GET', '/api/auth/get-session', { cookie: member.cookie })).json(), null, 'the member’s session ended')
  t.ok(await userExists(member.id), 'the member is untouched')
})

t.test(
  'over HTTPS a guest’s browser is bound by a __Host- cookie, which no sibling subdomain or plain http can plant',
  async (t) => {
    const secure = await buildTestApp({ env: { AUTH_URL: 'https://accounts.example.com', AUTH_COOKIE_DOMAIN: 'example.com' } })
    const res = await secure.inject({
      method: 'POST',
      url: '/api/auth/sign-in/anonymous',
      headers: { origin: WEB_ORIGIN },
      payload: {},
    })
    t.equal(res.statusCode, 200)
    const cookies = [res.headers['set-cookie'] ?? []].flat()
    const binding = cookies.find((c) => c.startsWith('__Host-insight.guest='))
    t.match(binding, /; Path=\/(;|$)/)
    t.match(binding, /; Secure/)
    t.match(binding, /; HttpOnly/)
    t.notMatch(binding, /Domain=/i, 'host-only, whatever AUTH_COOKIE_DOMAIN says')
    t.match(
      cookies.find((c) => c.startsWith('__Secure-better-auth.session_token=')),
      /Domain=example\.com/,
      'the session cookie itself may be shared with subdomains: it proves nothing about the browser',
    )
  },
)

t.test('a guest is made on a per-IP budget of its own', async (t) => {
  const limited = await buildTestApp({ env: { RATE_LIMIT_GUEST_IP_PER_MINUTE: '2' } })
  const make = () =>
    limited.inject({ method: 'POST', url: '/api/auth/sign-in/anonymous', headers: { origin: WEB_ORIGIN }, payload: {} })
  t.equal((await make()).statusCode, 200)
  t.equal((await make()).statusCode, 200)
  const third = await make()
  t.equal(third.statusCode, 429)
  t.equal(third.json().code, 'RATE_LIMITED')
  const signUpStill = await limited.inject({
    method: 'POST',
    url: '/api/auth/sign-up/email',
    headers: { origin: WEB_ORIGIN },
    payload: { name: 'Other budget', email: uniqueEmail('guest-budget'), password: PASSWORD },
  })
  t.equal(signUpStill.statusCode, 200, 'sign-up has its own')
})

t.test('a guest uses the member’s operations within the free plan, never a payment', async (t) => {
  const b = browser()
  await guestMakes(t, b)
  for (let n = 1; n < 5; n++) await b.send('POST', '/api/v1/journal/entries', { content: `day ${n}`, mood: 3 })
  const limit = await b.send('POST', '/api/v1/journal/entries', { content: 'one too many', mood: 3 })
  t.equal(limit.status, 402, 'the free plan’s limit holds')
  t.equal(limit.json.code, 'PLAN_LIMIT_REACHED')
  t.equal((await b.send('GET', '/api/v1/profile')).status, 200)

  const checkout = await b.send('POST', '/api/v1/payments/checkout', { product: 'premium_month', returnUrl: '/x' })
  t.same([checkout.status, checkout.json.code], [403, 'FORBIDDEN'], 'no checkout')
  const rpc = await b.send('POST', '/api/v1/payment/createCheckout', { json: { product: 'premium_month', returnUrl: '/x' } })
  t.same([rpc.status, rpc.json?.json?.code], [403, 'FORBIDDEN'], 'nor through the procedure')
  t.equal(
    (
      await app.db
        .selectFrom('payment')
        .select('id')
        .where('user_id', '=', (await b.client.getSession()).data!.user.id)
        .execute()
    ).length,
    0,
  )
})

t.test('route walk: a guest gets 403 wherever a route does not let guests in', async (t) => {
  const b = browser()
  await signInAsGuest(b)
  const routes = routeTable(app).filter((r) => !r.isPublic && !r.batch)
  const forGuests = routes.filter((r) => r.policy.guests)
  const never =
    /payment|two-factor|passkey|admin|update-user|change-email|change-password|link-social|unlink-account|delete-user|list-accounts/i
  t.same(
    forGuests.filter((r) => never.test(r.pattern)).map((r) => `${r.method} ${r.pattern}`),
    [],
    'no payment, two-factor, passkey, admin or way-in route lets a guest in',
  )
  for (const needed of [
    'POST /api/v1/journal/entries',
    'POST /api/v1/compatibility/results',
    'GET /api/auth/token',
    'POST /api/v1/consent',
  ]) {
    t.ok(
      forGuests.some((r) => `${r.method} ${r.pattern}` === needed),
      `${needed} lets a guest in`,
    )
  }
  for (const r of routes.filter((r) => !r.policy.guests)) {
    const res = await app.inject({
      method: r.method as 'GET',
      url: r.url,
      headers: { origin: WEB_ORIGIN, cookie: b.cookie(), 'content-type': 'application/json' },
      ...(r.stateChanging ? { payload: '{}' } : {}),
    })
    const body = r.method === 'HEAD' ? null : res.json()
    t.same(
      [res.statusCode, r.method === 'HEAD' ? 'FORBIDDEN' : errorCodeOf(body, r)],
      [403, 'FORBIDDEN'],
      `${r.method} ${r.pattern}`,
    )
  }
  t.ok((await b.client.getSession()).data?.user.isAnonymous, 'the walk left the guest as it was')
})

t.test('a guest’s data moves to the account its browser signs up for by password', async (t) => {
  const b = browser()
  const made = await guestMakes(t, b)
  const up = await b.client.signUp.email({ name: 'Real Person', email: uniqueEmail('guest-up'), password: PASSWORD })
  t.equal(up.error, null, JSON.stringify(up.error))
  t.equal(up.data?.user.isAnonymous, false)
  await adopted(t, made, up.data!.user.id, b)
  const entries = await b.send('GET', '/api/v1/journal/entries')
  t.same(
    entries.json.items.map((e: { id: string }) => e.id),
    [made.entryId],
    'the new account lists the entry',
  )
})

t.test('… and to an account its browser signs in to by password, counted with the account’s own usage', async (t) => {
  const owner = await signUp(app)
  await call(app, 'POST', '/api/v1/journal/entries', { cookie: owner.cookie, body: { content: 'mine', mood: 2 } })
  const b = browser()
  const made = await guestMakes(t, b)
  const wrong = await b.client.signIn.email({ email: owner.email, password: 'not the password at all' })
  t.equal(wrong.error?.status, 401)
  await untouched(t, made)
  const signedIn = await b.client.signIn.email({ email: owner.email, password: PASSWORD })
  t.equal(signedIn.error, null, JSON.stringify(signedIn.error))
  await adopted(t, made, owner.id, b, { journalEntries: 1, aiMessages: 0 })
})

t.test('… by an emailed code', async (t) => {
  const b = browser()
  const made = await guestMakes(t, b)
  const email = uniqueEmail('guest-otp')
  await b.client.emailOtp.sendVerificationOtp({ email, type: 'sign-in' })
  const code = /\b(\d{6})\b/.exec((await smtp.inbox.next(email)).text)![1]!
  const signedIn = await b.client.signIn.emailOtp({ email, otp: code })
  t.equal(signedIn.error, null, JSON.stringify(signedIn.error))
  await adopted(t, made, signedIn.data!.user.id, b)
})

t.test('… by a sign-in link it asked for, pressed in that browser; opened in another browser, nothing moves', async (t) => {
  const owner = await signUp(app)
  const b = browser()
  const made = await guestMakes(t, b)
  const linkAskedBy = async (asker: { send: TestBrowser['send'] }) => {
    t.equal((await asker.send('POST', '/api/auth/sign-in/magic-link', { email: owner.email })).status, 200)
    return linkIn(await smtp.inbox.next(owner.email)).searchParams.get('token')!
  }
  // The link pressed in another browser (a phone): that browser is signed in, the guest stays a guest.
  const phone = browser()
  const elsewhere = await phone.send('POST', '/api/auth/magic-link/verify', { token: await linkAskedBy(b) })
  t.equal(elsewhere.status, 200)
  await untouched(t, made)
  const here = await b.send('POST', '/api/auth/magic-link/verify', { token: await linkAskedBy(b) })
  t.equal(here.status, 200, JSON.stringify(here.json))
  await adopted(t, made, owner.id, b)
})

t.test('login CSRF: a link someone else asked for, pressed in a guest’s browser, is refused and moves nothing', async (t) => {
  const attacker = await signUp(app)
  const victim = browser()
  const made = await guestMakes(t, victim)
  const linkOf = async (asker: { send: TestBrowser['send'] } | null) => {
    const body = { email: attacker.email }
    if (asker) t.equal((await asker.send('POST', '/api/auth/sign-in/magic-link', body)).status, 200)
    else await call(app, 'POST', '/api/auth/sign-in/magic-link', { body })
    return linkIn(await smtp.inbox.next(attacker.email)).searchParams.get('token')!
  }
  // The attacker's own link, asked for without a guest (their device) or as another guest.
  const otherGuest = browser()
  await signInAsGuest(otherGuest)
  for (const asker of [null, otherGuest]) {
    const token = await linkOf(asker)
    const pressed = await victim.send('POST', '/api/auth/magic-link/verify', { token })
    t.same([pressed.status, pressed.json?.code], [403, 'FORBIDDEN'], 'refused in the guest’s browser')
    t.match(pressed.json?.message, /asked for in another browser/)
    await untouched(t, made)
    const who = await victim.send('GET', '/api/auth/get-session')
    t.equal(who.json?.user.id, made.guestId, 'the browser is still the guest')
    // Refused before use: the link still signs in the browser that asked for it, or one with no guest.
    t.equal((await browser().send('POST', '/api/auth/magic-link/verify', { token })).status, 200)
  }
  t.equal(await ownerOf('journal_entry', made.entryId), made.guestId, 'the attacker never gets the diary')
})

t.test('cookie tossing: a guest cookie planted in a browser moves nothing into the account signed in there', async (t) => {
  for (const way of ['password', 'emailed code'] as const) {
    const victim = await signUp(app)
    const declined = { type: 'marketing', version: '1', granted: false }
    t.equal((await call(app, 'POST', '/api/v1/consent', { cookie: victim.cookie, body: declined })).statusCode, 201)
    // The attacker makes a guest in their own browser (an entry, a result, marketing consent given)…
    const attacker = browser()
    const made = await guestMakes(t, attacker)
    // … and plants its session cookie in the victim's browser (from a sibling subdomain, or over plain http).
    const b = browser()
    b.jar.set('better-auth.session_token', attacker.jar.get('better-auth.session_token')!)
    t.equal((await b.client.getSession()).data?.user.id, made.guestId, `${way}: the browser now holds the attacker’s guest`)
    if (way === 'password') {
      t.equal((await b.client.signIn.email({ email: victim.email, password: victim.password })).error, null)
    } else {
      await b.client.emailOtp.sendVerificationOtp({ email: victim.email, type: 'sign-in' })
      const code = /\b(\d{6})\b/.exec((await smtp.inbox.next(victim.email)).text)![1]!
      t.equal((await b.client.signIn.emailOtp({ email: victim.email, otp: code })).error, null)
    }
    t.equal((await b.client.getSession()).data?.user.id, victim.id, `${way}: the victim is signed in`)
    await untouched(t, made)
    t.equal(await ownerOf('consent_record', made.consentId), made.guestId, `${way}: the attacker’s consent is not the victim’s`)
    const consents = await b.send('GET', '/api/v1/consent')
    t.equal(consents.json.current.marketing.granted, false, `${way}: the victim’s own answer stands`)
    t.same(await auditEvents(app.db, { action: 'auth.guest_adopted', actorId: victim.id }), [], `${way}: nothing adopted`)
    t.equal(await usageOf(victim.id, 'aiMessages'), 0, `${way}: the attacker’s usage is not the victim’s`)
    t.equal((await attacker.client.getSession()).data, null, `${way}: the planted session ended, as any a sign-in replaces`)
  }
})

t.test('… by a passkey', async (t) => {
  const owner = await signUp(app)
  const authenticator = new SoftAuthenticator(WEB_ORIGIN)
  await registerPasskey(app, authenticator, owner.cookie)
  authenticator.install()
  const b = browser()
  const made = await guestMakes(t, b)
  const signedIn = await b.client.signIn.passkey()
  t.equal(signedIn.error, null, JSON.stringify(signedIn.error))
  t.equal(signedIn.data?.user.id, owner.id)
  await adopted(t, made, owner.id, b)
})

t.test('… by the identity provider', async (t) => {
  const email = uniqueEmail('guest-idp')
  const sub = `guest-sub-${process.pid}-${Date.now()}`
  idp.accounts.set(sub, { email, email_verified: true, name: 'Provider Person' })
  const b = new Browser()
  const send = sendIn(b)
  const made = await guestMakes(t, { send }, async () => (await send('POST', '/api/auth/sign-in/anonymous', {})).json.user.id)
  await drive(b, `${API}/api/auth/sign-in/idp?callbackURL=${encodeURIComponent(`${WEB_ORIGIN}/home`)}`, {
    api: API,
    provider: idp.issuer,
    login: sub,
  })
  const session = (await send('GET', '/api/auth/get-session')).json
  t.equal(session?.user.email, email, 'signed in through the provider')
  await adopted(t, made, session.user.id, { send })
})

t.test('login CSRF by the identity provider: a flow planted in a guest’s browser moves nothing to the attacker', async (t) => {
  const sub = `guest-csrf-${process.pid}-${Date.now()}`
  idp.accounts.set(sub, { email: uniqueEmail('guest-csrf'), email_verified: true, name: 'Attacker' })
  // The attacker runs the flow in their own browser up to the provider's answer, and keeps it unused.
  const attacker = new Browser()
  const start = `${API}/api/auth/sign-in/idp?callbackURL=${encodeURIComponent(`${WEB_ORIGIN}/home`)}`
  const url = await driveUntilCallback(attacker, start, { api: API, login: sub })
  // The victim's own guest, in its browser; a sibling subdomain tosses the attacker's flow cookie there.
  const victim = new Browser()
  const send = sendIn(victim)
  const made = await guestMakes(t, { send }, async () => (await send('POST', '/api/auth/sign-in/anonymous', {})).json.user.id)
  victim.setCookie(API, 'idp_flow', attacker.cookie(API, 'idp_flow')!, '/api/auth')
  const landed = await victim.request(url)
  t.equal(landed.status, 302)
  t.match(landed.headers.get('location'), /error=state_mismatch/, 'refused: the flow is not this guest’s')
  await untouched(t, made)
  t.equal((await send('GET', '/api/auth/get-session')).json?.user.id, made.guestId, 'the browser is still the guest')
})

t.test('a sign-in with a second step moves the data only when the second step passes', async (t) => {
  const owner = await signUp(app)
  const { secret } = await enableTotp(app, owner, clock.now())
  const b = browser()
  const made = await guestMakes(t, b)
  const first = await b.client.signIn.email({ email: owner.email, password: PASSWORD })
  t.match(first.data, { twoFactorRedirect: true })
  await untouched(t, made)
  t.equal((await b.client.getSession()).data?.user.id, made.guestId, 'still the guest while the second step waits')
  const wrong = await b.client.twoFactor.verifyTotp({ code: codeAt(secret, clock.now(), 10) })
  t.equal(wrong.error?.status, 401)
  await untouched(t, made)
  // The next time step: the current one was spent turning two-factor on.
  const right = await b.client.twoFactor.verifyTotp({ code: codeAt(secret, clock.now(), 1) })
  t.equal(right.error, null, JSON.stringify(right.error))
  await adopted(t, made, owner.id, b)
})

t.test('a guest ends itself with delete-anonymous-user; an account cannot', async (t) => {
  const b = browser()
  const made = await guestMakes(t, b)
  const res = await b.fetch(`${API}/api/auth/delete-anonymous-user`, { method: 'POST' })
  t.equal(res.status, 200)
  t.same(await res.json(), { success: true })
  t.notOk(await userExists(made.guestId))
  t.equal(await ownerOf('journal_entry', made.entryId), undefined, 'with what it made')
  t.equal(await ownerOf('consent_record', made.consentId), undefined, 'its consents too')
  const member = await signUp(app)
  const refused = await call(app, 'POST', '/api/auth/delete-anonymous-user', { cookie: member.cookie, body: {} })
  t.same([refused.statusCode, refused.json().code], [403, 'USER_IS_NOT_ANONYMOUS'])
})

t.test(
  'the maintenance task purges unreachable guests with their data, never a reachable one; a sign-up racing it loses nothing',
  async (t) => {
    // One guest signs out (nobody can reach it now), one keeps its session.
    const gone = browser()
    const lost = await guestMakes(t, gone)
    await gone.client.signOut()
    const racers = await Promise.all(
      [0, 1, 2].map(async () => {
        const b = browser()
        return { b, made: await guestMakes(t, b) }
      }),
    )
    t.equal((await maintain(app)).guests, 0, 'untouched for less than GUEST_TTL_DAYS: kept')
    offset += 3 * DAY
    // Each racer signs up while the maintenance task runs.
    const outcomes = await Promise.all([
      maintain(app),
      ...racers.map(({ b }) => b.client.signUp.email({ name: 'Racer', email: uniqueEmail('guest-race'), password: PASSWORD })),
    ])
    const purged = (outcomes[0] as Awaited<ReturnType<typeof maintain>>).guests + (await maintain(app)).guests
    t.ok(purged >= 1, 'the unreachable guest is purged')
    t.notOk(await userExists(lost.guestId))
    t.equal(await ownerOf('journal_entry', lost.entryId), undefined, 'its entry with it')
    t.equal(await ownerOf('compatibility_result', lost.resultId), undefined, 'its result')
    t.equal(await ownerOf('consent_record', lost.consentId), undefined, 'its consent')
    for (const [i, { made }] of racers.entries()) {
      const up = outcomes[i + 1] as { data: { user: { id: string } } | null; error: unknown }
      t.equal(up.error, null, JSON.stringify(up.error))
      await adopted(t, made, up.data!.user.id, racers[i]!.b)
    }
    offset -= 3 * DAY
  },
)
