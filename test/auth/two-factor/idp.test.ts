// Sign-in through the identity provider stops for the second factor too: the callback sets the
// `two_factor` cookie, starts no session and sends the browser to the web app's two-factor page;
// verify-totp there starts the session. A real OpenID Connect provider on loopback.
import t from 'tap'
import { call, signUp, WEB_ORIGIN } from '../../helpers/app.js'
import { auditEvents, userRow } from '../../helpers/expect.js'
import { Browser, CLIENT_ID, CLIENT_SECRET, drive, startOidcProvider } from '../../helpers/idp.js'
import { freePort } from '../../helpers/port.js'
import {
  CHALLENGE,
  codeAt,
  enableTotp,
  SESSION,
  sessionRows,
  TRUST,
  twoFactorApp,
  verificationIds,
} from '../../helpers/two-factor.js'

const apiPort = await freePort()
const API = `http://127.0.0.1:${apiPort}`
const idp = await startOidcProvider(`${API}/api/auth/callback/idp`)
const { app, clock } = await twoFactorApp(
  { AUTH_URL: API, IDP_ISSUER: idp.issuer, IDP_CLIENT_ID: CLIENT_ID, IDP_CLIENT_SECRET: CLIENT_SECRET },
  apiPort,
)

let subCounter = 0
const newSubject = (email: string) => {
  const sub = `tf-sub-${process.pid}-${subCounter++}`
  idp.accounts.set(sub, { email, email_verified: true, name: 'Provider User' })
  return sub
}
const startUrl = `${API}/api/auth/sign-in/idp?${new URLSearchParams({ callbackURL: `${WEB_ORIGIN}/dashboard` })}`

/** A member with a verified email and two-factor on; returns the secret. */
async function verifiedMemberWithTwoFactor() {
  const user = await signUp(app)
  await app.db.updateTable('user').set({ email_verified: true }).where('id', '=', user.id).execute()
  const { secret, confirmed } = await enableTotp(app, user, clock.now())
  if (confirmed.statusCode !== 200) throw new Error(confirmed.body)
  return { ...user, secret }
}

/** The user the provider login `sub` is linked to, if any. */
const linkOf = async (sub: string) =>
  (
    await app.db
      .selectFrom('account')
      .select('user_id')
      .where('provider_id', '=', 'idp')
      .where('account_id', '=', sub)
      .executeTakeFirst()
  )?.user_id

const verifyTotp = (browser: Browser, code: string, trustDevice?: boolean) =>
  browser.request(`${API}/api/auth/two-factor/verify-totp`, {
    json: { code, ...(trustDevice ? { trustDevice } : {}) },
    headers: { origin: WEB_ORIGIN },
  })

t.test('the provider callback stops for two-factor: no session, the two_factor cookie, the two-factor page', async (t) => {
  const user = await verifiedMemberWithTwoFactor()
  const sub = newSubject(user.email)
  const browser = new Browser()
  const before = (await sessionRows(app, user.id)).length
  const result = await drive(browser, startUrl, { api: API, provider: idp.issuer, login: sub })
  t.equal(result.callbackResponse?.status, 302)
  t.equal(result.landed.origin, WEB_ORIGIN)
  t.equal(result.landed.pathname, '/two-factor')
  t.equal(result.landed.searchParams.get('callbackURL'), `${WEB_ORIGIN}/dashboard`)
  t.equal(browser.cookie(API, SESSION), undefined, 'no session cookie')
  t.ok(browser.cookie(API, CHALLENGE), 'the two_factor cookie is set')
  t.equal((await sessionRows(app, user.id)).length, before, 'no session row')
  t.equal(await linkOf(sub), undefined, 'the provider login is not linked before the second step')

  clock.advance(30_000)
  const wrong = await verifyTotp(browser, codeAt(user.secret, clock.now()) === '123456' ? '654321' : '123456')
  t.same([wrong.status, ((await wrong.json()) as { code: string }).code], [401, 'INVALID_CODE'])
  const res = await verifyTotp(browser, codeAt(user.secret, clock.now()), true)
  t.equal(res.status, 200)
  t.equal(((await res.json()) as { user: { id: string } }).user.id, user.id)
  t.ok(browser.cookie(API, SESSION), 'the session starts')
  t.equal(browser.cookie(API, CHALLENGE), undefined)
  const session = (await (await browser.request(`${API}/api/auth/get-session`)).json()) as { user: { id: string } }
  t.equal(session.user.id, user.id)
  t.equal(await linkOf(sub), user.id, 'linked with the session the second step started')

  // That browser is now trusted: the next provider sign-in goes straight to the callback URL.
  await browser.request(`${API}/api/auth/sign-out`, { json: {}, headers: { origin: WEB_ORIGIN } })
  t.ok(browser.cookie(API, TRUST))
  const again = await drive(browser, startUrl, { api: API, provider: idp.issuer, login: sub })
  t.equal(again.landed.toString(), `${WEB_ORIGIN}/dashboard`)
  t.ok(browser.cookie(API, SESSION))
})

t.test('an unverified account with a second factor is not claimed through the provider: the sign-in asks for it', async (t) => {
  // An account that turned two-factor on before the rule that a session must prove the address
  // first (src/auth/session/second-factor.ts), its address unverified: the provider proves the
  // mailbox, and a mailbox never beats a second factor.
  const holder = await signUp(app)
  const { confirmed } = await enableTotp(app, holder, clock.now())
  t.equal(confirmed.statusCode, 200)
  await app.db.updateTable('user').set({ email_verified: false }).where('id', '=', holder.id).execute()
  const sub = newSubject(holder.email)
  const browser = new Browser()
  const result = await drive(browser, startUrl, { api: API, provider: idp.issuer, login: sub })
  t.equal(result.landed.pathname, '/two-factor', 'the two-factor page')
  t.equal(result.landed.searchParams.get('twoFactorMethods'), 'totp')
  t.equal(browser.cookie(API, SESSION), undefined, 'no session')
  t.ok(browser.cookie(API, CHALLENGE))
  t.equal((await userRow(app.db, holder.id)).two_factor_enabled, true, 'TOTP stays')
  const ways = await app.db.selectFrom('account').select('provider_id').where('user_id', '=', holder.id).execute()
  t.same(ways.map((w) => w.provider_id).sort(), ['credential'], 'not taken back: the password stays, nothing linked yet')
})

t.test('a provider sign-in abandoned at the second step links nothing; the one that passes it links the login', async (t) => {
  const user = await verifiedMemberWithTwoFactor()
  const sub = newSubject(user.email)
  const abandoned = new Browser()
  const first = await drive(abandoned, startUrl, { api: API, provider: idp.issuer, login: sub })
  t.equal(first.landed.pathname, '/two-factor')
  t.ok(abandoned.cookie(API, CHALLENGE))
  // Whoever holds the provider account (or the mailbox behind it) but not the second factor stops here.
  const wrong = await verifyTotp(abandoned, '000000')
  t.equal(wrong.status, 401)
  t.equal(await linkOf(sub), undefined, 'no link for a sign-in that never passed the second step')
  const ways = await app.db.selectFrom('account').select('provider_id').where('user_id', '=', user.id).execute()
  t.same(
    ways.map((w) => w.provider_id),
    ['credential'],
  )
  // Nothing waits anywhere but in the challenge, which ends with its few minutes.
  const waiting = await verificationIds(app, user.id, 'two-factor-challenge')
  t.equal(waiting.length, 1)

  // The owner, through the provider again, passes the second step: the login is linked with the session.
  const owner = new Browser()
  await drive(owner, startUrl, { api: API, provider: idp.issuer, login: sub })
  clock.advance(30_000)
  const passed = await verifyTotp(owner, codeAt(user.secret, clock.now()))
  t.equal(passed.status, 200)
  t.equal(await linkOf(sub), user.id)
  const [linked] = await auditEvents(app.db, { action: 'auth.idp.account_linked', targetId: user.id })
  t.match(linked?.details, { afterSecondFactor: true })
  // The next provider sign-in finds the login linked and still asks for the second factor.
  const again = await drive(new Browser(), startUrl, { api: API, provider: idp.issuer, login: sub })
  t.equal(again.landed.pathname, '/two-factor', again.landed.toString())
})

t.test(
  'a provider sign-in whose login was linked to another account meanwhile births no session and links nothing',
  async (t) => {
    const user = await verifiedMemberWithTwoFactor()
    const sub = newSubject(user.email)
    const browser = new Browser()
    await drive(browser, startUrl, { api: API, provider: idp.issuer, login: sub })
    const other = await signUp(app)
    await app.db
      .insertInto('account')
      .values({ id: `acc-${sub}`, user_id: other.id, provider_id: 'idp', account_id: sub })
      .execute()
    const res = await verifyTotp(browser, codeAt(user.secret, clock.now(), 1))
    t.equal(res.status, 401)
    t.equal(browser.cookie(API, SESSION), undefined, 'no session')
    t.equal(await linkOf(sub), other.id, 'the other account keeps it')
    t.same((await sessionRows(app, user.id)).length, 1, "only the session of the user's sign-up")
  },
)

t.test('the second step racing the end of every session: the login is linked exactly when the session is born', async (t) => {
  // verify-totp links the provider login in the transaction that births the session; revoke-sessions
  // raises the credential epoch. Whichever commits first, a link never outlives a refused sign-in.
  for (let trial = 0; trial < 6; trial++) {
    const user = await verifiedMemberWithTwoFactor()
    const sub = newSubject(user.email)
    const browser = new Browser()
    await drive(browser, startUrl, { api: API, provider: idp.issuer, login: sub })
    // The revocation starts a little later each trial, so that each side wins some.
    const [passed, revoked] = await Promise.all([
      verifyTotp(browser, codeAt(user.secret, clock.now(), 1)),
      new Promise((r) => setTimeout(r, trial * 4)).then(() =>
        call(app, 'POST', '/api/auth/revoke-sessions', { cookie: user.cookie, body: {} }),
      ),
    ])
    const label = `trial ${trial}: ${passed.status} ${revoked.statusCode}`
    t.equal(revoked.statusCode, 200, label)
    t.ok([200, 401].includes(passed.status), `${label}: born, or refused as overtaken`)
    t.equal(await linkOf(sub), passed.status === 200 ? user.id : undefined, `${label}: linked exactly when born`)
  }
})
