// Issue 34, finding 4: a provider's address is held to the sign-up address rule (ASCII, NFKC-stable,
// case folded only in ASCII). A look-alike such as the Kelvin sign (U+212A), which full Unicode
// lower-casing turns into "k", must not reach Kate's account; the real provider on loopback sends it.
import t from 'tap'
import { buildTestApp, signUp, WEB_ORIGIN } from '../../helpers/app.js'
import { Browser, drive, providerForApi } from '../../helpers/idp.js'

const { apiPort, API, idp, env: idpEnv } = await providerForApi()
const app = await buildTestApp({
  env: idpEnv,
})
await app.listen({ port: apiPort, host: '127.0.0.1' })

let subCounter = 0
const newSubject = (account: { email: string; email_verified: boolean }) => {
  const sub = `look-alike-${process.pid}-${subCounter++}`
  idp.accounts.set(sub, account)
  return sub
}
const signInAs = (browser: Browser, sub: string) =>
  drive(browser, `${API}/api/auth/sign-in/idp?errorCallbackURL=%2Fauth%2Ffailed`, { api: API, provider: idp.issuer, login: sub })
const accountsOf = async (userId: string) =>
  (await app.db.selectFrom('account').select('provider_id').where('user_id', '=', userId).execute()).map((a) => a.provider_id)
const subjectLinked = async (sub: string) =>
  (await app.db.selectFrom('account').select('id').where('account_id', '=', sub).executeTakeFirst()) !== undefined
const usersNamed = async (email: string) =>
  (await app.db.selectFrom('user').select('id').where('email', '=', email).execute()).length

/** Kate's unverified password account, whose address starts with "kate". */
async function kate() {
  const user = await signUp(app, { email: `kate-${process.pid}-${subCounter++}@example.com` })
  return user
}

const refused = (result: Awaited<ReturnType<typeof signInAs>>) => result.landed.toString()

t.test("the Kelvin sign's look-alike address is refused and Kate's account stays hers", async (t) => {
  const victim = await kate()
  const lookAlike = `\u212A${victim.email.slice(1)}` // "\u212Aate-...": full Unicode lower-casing makes it "kate-..."
  t.equal(lookAlike.toLowerCase(), victim.email, 'the attack needs only toLowerCase')
  const sub = newSubject({ email: lookAlike, email_verified: true })
  const browser = new Browser()
  const result = await signInAs(browser, sub)
  t.equal(refused(result), `${WEB_ORIGIN}/auth/failed?error=invalid_email`)
  t.notOk(
    result.callbackResponse!.headers.getSetCookie().some((c) => /session_token=[^;]/.test(c)),
    'no session',
  )
  t.notOk(await subjectLinked(sub), 'no account is linked')
  t.same(await accountsOf(victim.id), ['credential'], "Kate's password stays her way in")
  const session = await (await browser.request(`${API}/api/auth/get-session`)).json()
  t.equal(session, null)
  const audit = await app.db
    .selectFrom('audit_event')
    .select('details')
    .where('action', '=', 'auth.idp.sign_in_failed')
    .orderBy('at', 'desc')
    .executeTakeFirst()
  t.same(audit?.details, { error: 'invalid_email' })
})

t.test('addresses outside the sign-up rule are refused, and nobody is created', async (t) => {
  const cases = [
    `\uFF4Bate-${process.pid}@example.com`, // fullwidth "k": NFKC makes it "k"
    `kate-${process.pid}@\u0435xample.com`, // Cyrillic "е"
    `k\u0101te-${process.pid}@example.com`, // any non-ASCII letter
    `kate-${process.pid}@example.com\u200B`, // an invisible character
    `ka te-${process.pid}@example.com`,
    'not-an-address',
  ]
  for (const email of cases) {
    const sub = newSubject({ email, email_verified: true })
    const result = await signInAs(new Browser(), sub)
    t.equal(refused(result), `${WEB_ORIGIN}/auth/failed?error=invalid_email`, JSON.stringify(email))
    t.notOk(await subjectLinked(sub), `${JSON.stringify(email)}: no account is linked`)
    t.equal(await usersNamed(email.toLowerCase()), 0, `${JSON.stringify(email)}: no user is created`)
  }
})

t.test('an ASCII address in capitals still links: folding stays ASCII-only', async (t) => {
  const victim = await kate()
  await app.db.updateTable('user').set({ email_verified: true }).where('id', '=', victim.id).execute()
  const sub = newSubject({ email: `  ${victim.email.toUpperCase()} `, email_verified: true })
  const browser = new Browser()
  const result = await signInAs(browser, sub)
  t.equal(refused(result), `${WEB_ORIGIN}/`)
  const session = await (await browser.request(`${API}/api/auth/get-session`)).json()
  t.equal(session.user.id, victim.id)
  t.same((await accountsOf(victim.id)).sort(), ['credential', 'idp'])
})

t.test('a linked subject whose provider address became a look-alike is refused too', async (t) => {
  const email = `linked-${process.pid}-${subCounter++}@example.com`
  const sub = newSubject({ email, email_verified: true })
  const first = new Browser()
  t.equal(refused(await signInAs(first, sub)), `${WEB_ORIGIN}/`)
  idp.accounts.set(sub, { email: `\u212A${email}`, email_verified: true })
  const again = await signInAs(new Browser(), sub)
  t.equal(refused(again), `${WEB_ORIGIN}/auth/failed?error=invalid_email`)
  t.equal(await usersNamed(email), 1)
})

t.test('link-social refuses a look-alike address of the signed-in user', async (t) => {
  const victim = await kate()
  const browser = new Browser()
  const eq = victim.cookie.indexOf('=')
  browser.setCookie(API, victim.cookie.slice(0, eq), victim.cookie.slice(eq + 1))
  const started = await browser.request(`${API}/api/auth/link-social`, {
    json: { provider: 'idp', callbackURL: '/linked', errorCallbackURL: '/link-failed' },
    headers: { origin: WEB_ORIGIN },
  })
  t.equal(started.status, 200)
  const sub = newSubject({ email: `\u212A${victim.email.slice(1)}`, email_verified: true })
  const result = await drive(browser, (await started.json()).url, { api: API, provider: idp.issuer, login: sub })
  t.equal(result.landed.toString(), `${WEB_ORIGIN}/link-failed?error=invalid_email`)
  t.same(await accountsOf(victim.id), ['credential'])
})
