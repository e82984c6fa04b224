// link-social at parity with better-auth 1.6.34: a signed-in user links the identity provider's
// account through better-auth's client and a real OpenID Connect provider on loopback, with the
// same `sub` rules as sign-in.
import { createAuthClient } from 'better-auth/client'
import t from 'tap'
import { newId } from '../../../src/shared/ids.js'
import { buildTestApp, call, signUp, WEB_ORIGIN } from '../../helpers/app.js'
import { auditEvents } from '../../helpers/expect.js'
import { Browser, drive, providerForApi } from '../../helpers/idp.js'

const { apiPort, API, idp, env: idpEnv } = await providerForApi()
const app = await buildTestApp({
  env: idpEnv,
})
await app.listen({ port: apiPort, host: '127.0.0.1' })

/** better-auth's client in a Browser (one cookie jar for the API and the provider), sending the web Origin. */
function clientIn(browser: Browser) {
  const customFetchImpl = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init)
    const text = request.method === 'GET' ? '' : await request.text()
    return browser.request(request.url, {
      method: request.method,
      headers: { origin: WEB_ORIGIN },
      ...(text ? { json: JSON.parse(text) } : {}),
    })
  }
  return createAuthClient({ baseURL: API, fetchOptions: { customFetchImpl } })
}

const subject = (account: { email: string; email_verified: boolean }) => {
  const sub = `link-${newId()}`
  idp.accounts.set(sub, account)
  return sub
}
const accountsOf = async (userId: string) =>
  (
    await app.db
      .selectFrom('account')
      .select(['provider_id', 'account_id'])
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .execute()
  ).map((a) => [a.provider_id, a.account_id])

async function signedIn() {
  const browser = new Browser()
  const client = clientIn(browser)
  const email = `linker-${newId()}@example.com`.toLowerCase()
  const res = await client.signUp.email({ name: 'Linker', email, password: 'correct horse battery staple' })
  if (res.error) throw new Error(JSON.stringify(res.error))
  return { browser, client, email, id: res.data!.user.id }
}

const link = async (me: Awaited<ReturnType<typeof signedIn>>, sub: string, body: Record<string, unknown> = {}) => {
  const res = await me.client.linkSocial({ provider: 'idp', callbackURL: '/linked', ...body })
  if (res.error) throw new Error(JSON.stringify(res.error))
  return drive(me.browser, res.data!.url, { api: API, provider: idp.issuer, login: sub })
}

t.test("link-social links the provider's account to the signed-in user, who then signs in with it", async (t) => {
  const me = await signedIn()
  const sub = subject({ email: me.email.toUpperCase(), email_verified: true })
  const started = await me.client.linkSocial({ provider: 'idp', callbackURL: '/linked' })
  t.equal(started.error, null, JSON.stringify(started.error))
  t.equal(started.data?.redirect, true)
  t.equal(new URL(started.data!.url).origin, idp.issuer)
  const result = await drive(me.browser, started.data!.url, { api: API, provider: idp.issuer, login: sub })
  t.equal(result.landed.toString(), `${WEB_ORIGIN}/linked`)
  t.notMatch(
    result.callbackResponse!.headers.getSetCookie().join('\n'),
    /session_token=[^;]/,
    'no new session: the user stays signed in',
  )
  t.same(await accountsOf(me.id), [
    ['credential', me.id],
    ['idp', sub],
  ])
  const listed = await me.client.listAccounts()
  t.same(
    listed.data?.map((a) => a.providerId),
    ['credential', 'idp'],
  )
  t.equal((await me.client.getSession()).data?.user.emailVerified, true, 'the provider vouched for the address')
  const audit = await auditEvents(app.db, { action: 'auth.idp.account_linked', targetId: me.id })
  t.same(
    audit.map((a) => a.details),
    [{ via: 'link-social' }],
  )

  const again = await link(me, sub)
  t.equal(again.landed.toString(), `${WEB_ORIGIN}/linked`, 'linking the same account again is a no-op')
  t.equal((await accountsOf(me.id)).length, 2)

  const elsewhere = new Browser()
  await drive(elsewhere, `${API}/api/auth/sign-in/idp`, { api: API, provider: idp.issuer, login: sub })
  const session = await (await elsewhere.request(`${API}/api/auth/get-session`)).json()
  t.equal(session.user.id, me.id, 'the provider now signs in to this account')
})

t.test('a subject already linked to another user is refused', async (t) => {
  const other = await signedIn()
  const sub = subject({ email: other.email, email_verified: true })
  await link(other, sub)
  const me = await signedIn()
  idp.accounts.set(sub, { email: me.email, email_verified: true })
  const result = await link(me, sub, { errorCallbackURL: '/link-failed' })
  t.equal(result.landed.toString(), `${WEB_ORIGIN}/link-failed?error=account_already_linked_to_different_user`)
  t.same(await accountsOf(me.id), [['credential', me.id]])
  t.same(await accountsOf(other.id), [
    ['credential', other.id],
    ['idp', sub],
  ])
})

t.test('another email, or one the provider does not vouch for, is refused', async (t) => {
  const me = await signedIn()
  const otherEmail = subject({ email: `someone-${newId()}@example.com`.toLowerCase(), email_verified: true })
  const mismatch = await link(me, otherEmail)
  t.equal(mismatch.landed.toString(), `${WEB_ORIGIN}/auth/error?error=email_doesn%27t_match`)
  t.same(await accountsOf(me.id), [['credential', me.id]], 'nothing linked')
  // A new browser: the provider remembers who signed in to it in the first one.
  const other = await signedIn()
  const unverified = subject({ email: other.email, email_verified: false })
  const refused = await link(other, unverified)
  t.equal(refused.landed.toString(), `${WEB_ORIGIN}/auth/error?error=unable_to_link_account`)
  t.same(await accountsOf(other.id), [['credential', other.id]], 'nothing linked')
})

t.test('a browser signed out (or signed in as someone else) by the callback links nothing', async (t) => {
  const me = await signedIn()
  const sub = subject({ email: me.email, email_verified: true })
  const started = await me.client.linkSocial({ provider: 'idp', callbackURL: '/linked' })
  await me.client.signOut()
  const result = await drive(me.browser, started.data!.url, { api: API, provider: idp.issuer, login: sub })
  t.equal(result.landed.toString(), `${WEB_ORIGIN}/auth/error?error=unable_to_link_account`)
  t.same(await accountsOf(me.id), [['credential', me.id]])
  t.equal(await app.db.selectFrom('account').select('id').where('account_id', '=', sub).executeTakeFirst(), undefined)

  const restarted = await me.client.signIn.email({ email: me.email, password: 'correct horse battery staple' })
  t.equal(restarted.error, null)
  const second = await me.client.linkSocial({ provider: 'idp', callbackURL: '/linked' })
  const intruder = await me.client.signUp.email({
    name: 'Other',
    email: `other-${newId()}@example.com`.toLowerCase(),
    password: 'correct horse battery staple',
  })
  const swapped = await drive(me.browser, second.data!.url, { api: API, provider: idp.issuer, login: sub })
  t.equal(swapped.landed.toString(), `${WEB_ORIGIN}/auth/error?error=unable_to_link_account`)
  t.same(
    await accountsOf(intruder.data!.user.id),
    [['credential', intruder.data!.user.id]],
    'not linked to the user now signed in',
  )
  t.same(await accountsOf(me.id), [['credential', me.id]], 'nor to the one who started')
})

t.test('link-social refusals: no session, unknown provider, unknown keys, untrusted callback', async (t) => {
  const anonymous = await call(app, 'POST', '/api/auth/link-social', { body: { provider: 'idp' } })
  t.same([anonymous.statusCode, anonymous.json().code], [401, 'UNAUTHORIZED'])
  const me = await signUp(app)
  const post = (body: unknown) => call(app, 'POST', '/api/auth/link-social', { cookie: me.cookie, body })
  const github = await post({ provider: 'github' })
  t.same([github.statusCode, github.json().code], [404, 'PROVIDER_NOT_FOUND'])
  for (const body of [
    { provider: 'idp', userId: 'x' },
    { provider: 'idp', idToken: { token: 'forged' } },
    {},
    { provider: 'p'.repeat(65) },
  ]) {
    const res = await post(body)
    t.same([res.statusCode, res.json().code], [400, 'VALIDATION_ERROR'], JSON.stringify(body).slice(0, 50))
  }
  const evil = await post({ provider: 'idp', callbackURL: 'https://evil.example/' })
  t.same([evil.statusCode, evil.json().code], [403, 'INVALID_CALLBACK_URL'])
  const disabled = await post({ provider: 'idp', disableRedirect: true })
  t.same([disabled.statusCode, disabled.json().redirect], [200, false])
})
