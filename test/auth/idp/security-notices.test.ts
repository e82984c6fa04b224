// Security notices of the identity provider's links, against a real OpenID Connect provider and a
// real SMTP server on loopback: linking (link-social, or a provider sign-in that links an existing
// account) is mailed, and the notice's link removes the provider's way in.
import t, { type Test } from 'tap'
import { newId } from '../../../src/shared/ids.js'
import { buildTestApp, call, signUp, WEB_ORIGIN } from '../../helpers/app.js'
import { accountsOf } from '../../helpers/expect.js'
import { Browser, CLIENT_ID, CLIENT_SECRET, drive, startOidcProvider } from '../../helpers/idp.js'
import { freePort } from '../../helpers/port.js'
import { linkIn, startSmtpServer } from '../../helpers/smtp.js'

const apiPort = await freePort()
const API = `http://127.0.0.1:${apiPort}`
const idp = await startOidcProvider(`${API}/api/auth/callback/idp`)
const smtp = await startSmtpServer()
const app = await buildTestApp({
  env: {
    AUTH_URL: API,
    SMTP_URL: smtp.url,
    IDP_ISSUER: idp.issuer,
    IDP_CLIENT_ID: CLIENT_ID,
    IDP_CLIENT_SECRET: CLIENT_SECRET,
  },
})
await app.listen({ port: apiPort, host: '127.0.0.1' })

const subject = (email: string) => {
  const sub = `notice-${newId()}`
  idp.accounts.set(sub, { email, email_verified: true })
  return sub
}
const providerLinks = async (userId: string) => (await accountsOf(app.db, userId, 'idp').execute()).map((a) => a.account_id)

/** The notices mailed to `email` since the last call are these; the first one's token. */
async function noticesTo(t: Test, email: string, subjects: string[]): Promise<string> {
  await app.settled()
  const mails = smtp.inbox.notices.for(email)
  smtp.inbox.notices.mails.splice(0)
  t.same(mails.map((m) => m.subject).sort(), subjects.map((s) => `Security notice: ${s}`).sort())
  return linkIn(mails[0]!).searchParams.get('token')!
}

t.test('link-social is mailed; the link of its notice removes the provider link', async (t) => {
  const user = await signUp(app)
  const browser = new Browser()
  browser.setCookie(API, user.cookie.split('=')[0]!, user.cookie.split('=').slice(1).join('='))
  const sub = subject(user.email)
  const started = await browser.request(`${API}/api/auth/link-social`, {
    json: { provider: 'idp', callbackURL: '/linked' },
    headers: { origin: WEB_ORIGIN },
  })
  t.equal(started.status, 200)
  const { url } = (await started.json()) as { url: string }
  const result = await drive(browser, url, { api: API, provider: idp.issuer, login: sub })
  t.equal(result.landed.toString(), `${WEB_ORIGIN}/linked`)
  t.same(await providerLinks(user.id), [sub])
  const token = await noticesTo(t, user.email, ['a sign-in provider was linked'])

  const secured = await call(app, 'POST', '/api/auth/secure-account', { body: { token }, headers: { origin: API } })
  t.equal(secured.statusCode, 200, secured.body)
  t.same(await providerLinks(user.id), [], "the provider's way in went: a provider sign-in would skip the reset")
})

t.test('a provider sign-in that links an existing account is mailed to it', async (t) => {
  const user = await signUp(app)
  await app.db.updateTable('user').set({ email_verified: true }).where('id', '=', user.id).execute()
  const sub = subject(user.email)
  const result = await drive(new Browser(), `${API}/api/auth/sign-in/idp`, { api: API, provider: idp.issuer, login: sub })
  t.equal(result.callbackResponse?.status, 302)
  t.same(await providerLinks(user.id), [sub])
  // And the sign-in itself came from a browser the account had not used.
  await noticesTo(t, user.email, ['a sign-in provider was linked', 'a sign-in from a new device'])
})
