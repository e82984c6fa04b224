// Sign-in through the identity provider stops for the second factor too: the callback sets the
// `two_factor` cookie, starts no session and sends the browser to the web app's two-factor page;
// verify-totp there starts the session. A real OpenID Connect provider on loopback.
import t from 'tap'
import { signUp, WEB_ORIGIN } from '../../helpers/app.js'
import { userRow } from '../../helpers/expect.js'
import { Browser, CLIENT_ID, CLIENT_SECRET, drive, startOidcProvider } from '../../helpers/idp.js'
import { freePort } from '../../helpers/port.js'
import { CHALLENGE, codeAt, enableTotp, SESSION, sessionRows, TRUST, twoFactorApp } from '../../helpers/two-factor.js'

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
  const linked = await app.db.selectFrom('account').select('user_id').where('account_id', '=', sub).executeTakeFirst()
  t.equal(linked?.user_id, user.id, 'the provider account is linked to the user')

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

  // That browser is now trusted: the next provider sign-in goes straight to the callback URL.
  await browser.request(`${API}/api/auth/sign-out`, { json: {}, headers: { origin: WEB_ORIGIN } })
  t.ok(browser.cookie(API, TRUST))
  const again = await drive(browser, startUrl, { api: API, provider: idp.issuer, login: sub })
  t.equal(again.landed.toString(), `${WEB_ORIGIN}/dashboard`)
  t.ok(browser.cookie(API, SESSION))
})

t.test('an unverified account with a second factor is not claimed through the provider: the sign-in asks for it', async (t) => {
  // An account that turned two-factor on before the rule that a session must prove the address
  // first (src/auth/core/second-factor.ts), its address unverified: the provider proves the
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
  t.same(ways.map((w) => w.provider_id).sort(), ['credential', 'idp'], 'not taken back: the password stays')
})
