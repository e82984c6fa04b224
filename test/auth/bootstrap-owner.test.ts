// BOOTSTRAP_OWNER_EMAIL against whoever registers the owner's address first, with a real OpenID
// Connect provider and SMTP server on loopback: the account becomes owner only when the one who
// proves the mailbox holds every way in (src/auth/account/bootstrap.ts). Each attacker here holds a way in
// (a provider login, a password) and waits for the real owner to open a mail they never asked for.
import t, { type Test } from 'tap'
import { buildTestApp, call, uniqueEmail, WEB_ORIGIN } from '../helpers/app.js'
import { Browser, CLIENT_ID, CLIENT_SECRET, drive, startOidcProvider } from '../helpers/idp.js'
import { freePort } from '../helpers/port.js'
import { linkIn, resetThroughMailbox, startSmtpServer } from '../helpers/smtp.js'

const smtp = await startSmtpServer()
const apiPort = await freePort()
const API = `http://127.0.0.1:${apiPort}`
const idp = await startOidcProvider(`${API}/api/auth/callback/idp`)

/**
 * An app whose bootstrap owner is a fresh address, `OWNER`, listening on API for the provider's
 * redirects; `userRow` reads a user's email, its proof and role.
 */
async function boot(t: Test) {
  const ownerEmail = uniqueEmail('owner')
  const app = await buildTestApp({
    env: {
      AUTH_URL: API,
      SMTP_URL: smtp.url,
      BOOTSTRAP_OWNER_EMAIL: ownerEmail,
      IDP_ISSUER: idp.issuer,
      IDP_CLIENT_ID: CLIENT_ID,
      IDP_CLIENT_SECRET: CLIENT_SECRET,
    },
  })
  await app.listen({ port: apiPort, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const userRow = (id: string) =>
    app.db.selectFrom('user').select(['email', 'email_verified', 'role']).where('id', '=', id).executeTakeFirstOrThrow()
  return { app, userRow, OWNER: ownerEmail }
}

let subjects = 0
function providerLogin(account: { email: string; email_verified: boolean }): string {
  const sub = `bootstrap-${process.pid}-${subjects++}`
  idp.accounts.set(sub, account)
  return sub
}
const signInThroughProvider = (browser: Browser, sub: string) =>
  drive(browser, `${API}/api/auth/sign-in/idp`, { api: API, provider: idp.issuer, login: sub })
async function sessionOf(browser: Browser) {
  const res = await browser.request(`${API}/api/auth/get-session`)
  return (await res.json()) as { user: { id: string; role: string; email: string } } | null
}
const post = (browser: Browser, path: string, json: unknown) =>
  browser.request(`${API}${path}`, { json, headers: { origin: WEB_ORIGIN } })
/** Presses the button of a change of address's approval page (no session: wherever the mail is read): true when it worked. */
async function approveElsewhere(link: URL): Promise<boolean> {
  const res = await fetch(`${API}${link.pathname}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: API },
    body: JSON.stringify({ token: link.searchParams.get('token') }),
  })
  return res.status === 200
}
/** Opens a mailed link in a browser signed in to nothing (the real owner's own): true when it worked. */
async function openElsewhere(link: URL): Promise<boolean> {
  const res = await fetch(`${API}${link.pathname}${link.search}`, { redirect: 'manual' })
  if (res.status === 200) return true
  return res.status === 302 && !new URL(res.headers.get('location')!).searchParams.has('error')
}

t.test('a provider-only account moved to the owner address is not promoted when the owner opens its link', async (t) => {
  const { app, userRow, OWNER } = await boot(t)
  const attackerEmail = uniqueEmail('attacker')
  const sub = providerLogin({ email: attackerEmail, email_verified: true })
  const attacker = new Browser()
  await signInThroughProvider(attacker, sub)
  const attackerId = (await sessionOf(attacker))!.user.id
  t.equal((await post(attacker, '/api/auth/change-email', { newEmail: OWNER })).status, 200)
  t.ok(await approveElsewhere(linkIn(await smtp.inbox.next(attackerEmail))), 'the attacker approves')
  // The owner opens the confirmation, unasked, without a session of the account: the address stays.
  t.notOk(await openElsewhere(linkIn(await smtp.inbox.next(OWNER))), 'the owner opens the confirmation: refused')
  t.same(await userRow(attackerId), { email: attackerEmail, email_verified: true, role: 'member' })
  // An account that reached the address before that rule (as a release before it let happen).
  await app.db.updateTable('user').set({ email: OWNER }).where('id', '=', attackerId).execute()
  t.equal((await sessionOf(attacker))!.user.role, 'member')

  // The owner's own provider sign-in links to the account, but the attacker's login is still a way in.
  const ownerSub = providerLogin({ email: OWNER, email_verified: true })
  const owner = new Browser()
  await signInThroughProvider(owner, ownerSub)
  t.equal((await sessionOf(owner))!.user.id, attackerId)
  t.equal((await userRow(attackerId)).role, 'member', 'two provider logins: not the only way in')

  // The reset takes the account back: the password is the only way in, and then it is owner.
  t.equal((await resetThroughMailbox(app, smtp.inbox, OWNER, 'the owner chose this one')).statusCode, 200)
  t.equal((await userRow(attackerId)).role, 'owner')
  t.equal(await sessionOf(attacker), null, "the attacker's session ended")
  t.equal(await sessionOf(owner), null)
  const ways = await app.db.selectFrom('account').select('provider_id').where('user_id', '=', attackerId).execute()
  t.same(ways, [{ provider_id: 'credential' }], 'both provider logins went with the reset')
  const again = new Browser()
  await signInThroughProvider(again, sub)
  const session = (await sessionOf(again))!
  t.not(session.user.id, attackerId, "the attacker's login now makes an account of its own")
  t.equal(session.user.role, 'member')
})

t.test(
  'a provider sign-up with the owner address unverified is not promoted by a verification link opened elsewhere',
  async (t) => {
    const { app, userRow, OWNER } = await boot(t)
    const attacker = new Browser()
    await signInThroughProvider(attacker, providerLogin({ email: OWNER, email_verified: false }))
    const attackerId = (await sessionOf(attacker))!.user.id
    t.equal((await call(app, 'POST', '/api/auth/send-verification-email', { body: { email: OWNER } })).statusCode, 200)
    t.ok(await openElsewhere(linkIn(await smtp.inbox.next(OWNER))))
    t.same(await userRow(attackerId), { email: OWNER, email_verified: true, role: 'member' })
    t.equal((await sessionOf(attacker))!.user.role, 'member')
  },
)

t.test('the reset that makes the owner removes the provider logins the first holder set up; a second factor stays', async (t) => {
  const { app, userRow, OWNER } = await boot(t)
  const attackerEmail = uniqueEmail('attacker')
  const attacker = new Browser()
  const signUp = await post(attacker, '/api/auth/sign-up/email', {
    name: 'A',
    email: attackerEmail,
    password: 'attacker password 123',
  })
  t.equal(signUp.status, 200)
  const attackerId = (await sessionOf(attacker))!.user.id
  // Their own verified provider login, linked from their session.
  const sub = providerLogin({ email: attackerEmail, email_verified: true })
  const link = (await (await post(attacker, '/api/auth/link-social', { provider: 'idp', disableRedirect: true })).json()) as {
    url: string
  }
  await drive(attacker, link.url, { api: API, provider: idp.issuer, login: sub })
  await app.db.updateTable('user').set({ two_factor_enabled: true }).where('id', '=', attackerId).execute()

  await post(attacker, '/api/auth/change-email', { newEmail: OWNER })
  // The provider vouched for the attacker's address: the approval goes there first.
  t.ok(await approveElsewhere(linkIn(await smtp.inbox.next(attackerEmail))), 'the attacker approves')
  t.notOk(await openElsewhere(linkIn(await smtp.inbox.next(OWNER))), 'the owner opens the confirmation: refused')
  t.same(await userRow(attackerId), { email: attackerEmail, email_verified: true, role: 'member' })
  // An account that reached the address before that rule (as a release before it let happen).
  await app.db.updateTable('user').set({ email: OWNER }).where('id', '=', attackerId).execute()

  t.equal((await resetThroughMailbox(app, smtp.inbox, OWNER, 'the owner chose this one')).statusCode, 200)
  t.equal((await userRow(attackerId)).role, 'owner')
  // A mailbox never beats a second factor, the bootstrap owner's included: the new password signs
  // in only with it (an operator removes one nobody at hand holds: docs/operations.md).
  const row = await app.db.selectFrom('user').select('two_factor_enabled').where('id', '=', attackerId).executeTakeFirstOrThrow()
  t.equal(row.two_factor_enabled, true, 'the second factor stays')
  const withPassword = await call(app, 'POST', '/api/auth/sign-in/email', {
    body: { email: OWNER, password: 'the owner chose this one' },
  })
  t.match(withPassword.json(), { twoFactorRedirect: true })
  const later = new Browser()
  await signInThroughProvider(later, sub)
  t.not((await sessionOf(later))?.user.id, attackerId, "the attacker's provider login no longer reaches the account")
  const old = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: OWNER, password: 'attacker password 123' } })
  t.equal(old.statusCode, 401)
})

t.test('the owner signing in through the provider, the account only way in, becomes owner at once', async (t) => {
  const { userRow, OWNER } = await boot(t)
  const owner = new Browser()
  await signInThroughProvider(owner, providerLogin({ email: OWNER, email_verified: true }))
  const session = (await sessionOf(owner))!
  t.equal(session.user.role, 'owner')
  t.equal((await userRow(session.user.id)).role, 'owner')
})

t.test(
  "a sign-up link opened elsewhere proves the address, not the squatter's ways in: the owner's provider sign-in takes the account back",
  async (t) => {
    // The first holder chose a password; the real owner opened the sign-up's mail elsewhere (no
    // session of the account), then signs in through the provider.
    const { app, userRow, OWNER } = await boot(t)
    const squatter = new Browser()
    await post(squatter, '/api/auth/sign-up/email', { name: 'S', email: OWNER, password: 'the squatter chose this one' })
    const id = (await sessionOf(squatter))!.user.id
    t.ok(await openElsewhere(linkIn(await smtp.inbox.next(OWNER))))
    const proof = await app.db.selectFrom('user').select('ways_in_unproven').where('id', '=', id).executeTakeFirstOrThrow()
    t.equal(proof.ways_in_unproven, true, 'verified, by someone who holds no session of the account')
    const owner = new Browser()
    await signInThroughProvider(owner, providerLogin({ email: OWNER, email_verified: true }))
    t.equal((await sessionOf(owner))!.user.id, id)
    t.same(await userRow(id), { email: OWNER, email_verified: true, role: 'owner' }, 'the provider login is now the only way in')
    const ways = await app.db.selectFrom('account').select('provider_id').where('user_id', '=', id).execute()
    t.same(ways, [{ provider_id: 'idp' }], "the squatter's password went")
    t.equal(await sessionOf(squatter), null, "the squatter's session ended")
    const squatterIn = await call(app, 'POST', '/api/auth/sign-in/email', {
      body: { email: OWNER, password: 'the squatter chose this one' },
    })
    t.equal(squatterIn.statusCode, 401)
  },
)

t.test(
  'a provider linked from a session proves the mailbox, not who holds the account: it does not make the owner',
  async (t) => {
    const { userRow, OWNER } = await boot(t)
    const owner = new Browser()
    const signUp = await post(owner, '/api/auth/sign-up/email', { name: 'O', email: OWNER, password: 'the owner chose this one' })
    t.equal(signUp.status, 200)
    await smtp.inbox.next(OWNER) // the verification mail, not needed: the provider vouches for the address
    const id = (await sessionOf(owner))!.user.id
    const link = (await (await post(owner, '/api/auth/link-social', { provider: 'idp', disableRedirect: true })).json()) as {
      url: string
    }
    await drive(owner, link.url, { api: API, provider: idp.issuer, login: providerLogin({ email: OWNER, email_verified: true }) })
    t.same(await userRow(id), { email: OWNER, email_verified: true, role: 'member' })
  },
)

t.test('whoever came first sets up no second factor the owner would be asked for', async (t) => {
  // The squatter tries to turn two-factor on with its own app: the address was proven without a
  // session of the account, so it cannot (src/auth/session/second-factor.ts), and the owner's
  // provider sign-in takes the account back and makes the owner, asked for nobody's code.
  const { app, userRow, OWNER } = await boot(t)
  const squatter = new Browser()
  await post(squatter, '/api/auth/sign-up/email', { name: 'S', email: OWNER, password: 'the squatter chose this one' })
  const id = (await sessionOf(squatter))!.user.id
  t.ok(await openElsewhere(linkIn(await smtp.inbox.next(OWNER))), 'the owner opens the sign-up mail')
  const enabled = await post(squatter, '/api/auth/two-factor/enable', { password: 'the squatter chose this one' })
  t.equal(enabled.status, 403)
  t.equal(((await enabled.json()) as { code: string }).code, 'EMAIL_NOT_PROVEN')
  t.same(await app.db.selectFrom('two_factor').select('user_id').where('user_id', '=', id).execute(), [])

  const owner = new Browser()
  await signInThroughProvider(owner, providerLogin({ email: OWNER, email_verified: true }))
  t.equal((await userRow(id)).role, 'owner')
  const session = await sessionOf(owner)
  t.equal(session?.user.role, 'owner', 'signed in, asked for no code')
  t.equal(await sessionOf(squatter), null)
})

t.test('what got in before the promotion (a session, an emailed link) ends with it', async (t) => {
  // The squatter keeps a session and a change of address to its own mailbox, then gives up its
  // password so that the owner's provider login is the only way in left.
  const { userRow, OWNER } = await boot(t)
  const squatter = new Browser()
  await post(squatter, '/api/auth/sign-up/email', { name: 'S', email: OWNER, password: 'the squatter chose this one' })
  const id = (await sessionOf(squatter))!.user.id
  const verification = linkIn(await smtp.inbox.next(OWNER))
  const away = uniqueEmail('squatter')
  t.equal((await post(squatter, '/api/auth/change-email', { newEmail: away })).status, 200)
  const held = linkIn(await smtp.inbox.next(away)) // unverified: the new address gets its link at once
  t.ok(await openElsewhere(verification), 'the owner opens the sign-up mail')

  const ownerLogin = providerLogin({ email: OWNER, email_verified: true })
  const again = new Browser()
  await signInThroughProvider(again, ownerLogin)
  t.equal((await userRow(id)).role, 'owner', "the owner's provider login is the only way in")
  t.equal(await sessionOf(squatter), null, "the squatter's session ended with the take-back")
  t.equal((await sessionOf(again))!.user.role, 'owner')
  t.notOk(await openElsewhere(held), "the squatter's change of address ended too")
  t.equal((await userRow(id)).email, OWNER)
})
