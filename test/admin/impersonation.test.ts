// Impersonation through better-auth's own adminClient(), as an admin panel drives it: an admin or
// owner opens a member's account as the member sees it, for an hour at most, read-only, audited,
// told to the member; their own session is kept aside and comes back at stop-impersonating; ending
// the admin's session ends the impersonation at once.
import { createRemoteJWKSet, jwtVerify } from 'jose'
import t from 'tap'
import { buildTestApp, call, sessionCookieOf, signUp, signUpWithRole } from '../helpers/app.js'
import { adminBrowser } from '../helpers/auth-client.js'
import { auditEvents } from '../helpers/expect.js'
import { startSmtpServer } from '../helpers/smtp.js'
import { enableTotp } from '../helpers/two-factor.js'

const smtp = await startSmtpServer()
let offsetMs = 0
const clock = { now: () => new Date(Date.now() + offsetMs) }
const HOUR = 60 * 60 * 1000

async function listeningApp(env: Record<string, string> = {}) {
  const app = await buildTestApp({ env: { SMTP_URL: smtp.url, ...env }, deps: { clock } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, baseURL: `http://127.0.0.1:${(app.server.address() as { port: number }).port}` }
}

const { app, baseURL } = await listeningApp()

/** A user of that role, signed in through better-auth's client with adminClient(). */
async function signedIn(role: 'member' | 'admin' | 'owner', on = { app, baseURL }) {
  const user = await signUpWithRole(on.app, role)
  const browser = adminBrowser(on.baseURL)
  const res = await browser.client.signIn.email({ email: user.email, password: user.password })
  if (res.error) throw new Error(`sign-in failed: ${res.error.message}`)
  return { ...browser, user }
}

/** adminClient() types impersonate-user's session as better-auth's core session, without the plugin's field. */
const impersonatorOf = (session: object) => (session as { impersonatedBy?: string | null }).impersonatedBy

const liveSessionIds = async (userId: string) =>
  (await app.db.selectFrom('session').select('id').where('user_id', '=', userId).execute()).map((r) => r.id)

t.test('support takes nothing away: no token and no data export for an impersonation, writes allowed or not', async (t) => {
  const writable = await listeningApp({ IMPERSONATION_ALLOWS_WRITES: 'true' })
  for (const on of [{ app, baseURL }, writable]) {
    const admin = await signedIn('admin', on)
    const member = await signUp(on.app, { name: 'Tomas Token' })
    const own = await call(on.app, 'GET', '/api/auth/token', { cookie: admin.cookie() })
    t.equal(own.statusCode, 200, "the admin's own token")

    t.equal((await admin.client.admin.impersonateUser({ userId: member.id })).error, null)
    const token = await call(on.app, 'GET', '/api/auth/token', { cookie: admin.cookie() })
    t.same([token.statusCode, token.json().code], [403, 'IMPERSONATION_REFUSED'])
    const session = await call(on.app, 'GET', '/api/auth/get-session', { cookie: admin.cookie() })
    t.same([session.json()?.user.id, session.headers['set-auth-jwt']], [member.id, undefined], 'get-session sends none')
    const exported = await call(on.app, 'GET', '/api/v1/me/export', { cookie: admin.cookie() })
    t.same([exported.statusCode, exported.json().code], [403, 'IMPERSONATION_REFUSED'])
    const rpc = await call(on.app, 'POST', '/api/v1/me/exportMyData', { cookie: admin.cookie(), body: { json: {} } })
    t.same([rpc.statusCode, rpc.json().json.code], [403, 'IMPERSONATION_REFUSED'])
    t.same(await auditEvents(on.app.db, { action: 'personal_data.exported', targetId: member.id }), [], 'nothing exported')
    // What the member sees on screen still answers.
    t.equal((await call(on.app, 'GET', '/api/v1/profile', { cookie: admin.cookie() })).statusCode, 200)

    t.equal((await admin.client.admin.stopImpersonating()).error, null)
    const back = await call(on.app, 'GET', '/api/auth/token', { cookie: admin.cookie() })
    const keys = createRemoteJWKSet(new URL(`${on.baseURL}/api/auth/jwks`))
    t.same((await jwtVerify(back.json().token, keys)).payload.sub, admin.user.id, 'back to the admin: tokens again')
  }
})

t.test('an admin opens a member account as the member sees it, and gets their own session back', async (t) => {
  const admin = await signedIn('admin')
  const member = await signUp(app, { name: 'Mira Member' })
  const adminSession = (await admin.client.getSession()).data!.session

  const started = await admin.client.admin.impersonateUser({ userId: member.id })
  t.equal(started.error, null)
  t.equal(started.data!.user.id, member.id)
  t.equal(impersonatorOf(started.data!.session), admin.user.id)
  t.ok(admin.jar.get('better-auth.admin_session'), "the admin's session is kept aside")

  const seen = (await admin.client.getSession()).data!
  t.equal(seen.user.email, member.email, 'get-session is the member')
  t.equal(seen.session.impersonatedBy, admin.user.id)
  t.ok(new Date(seen.session.expiresAt).getTime() <= Date.now() + HOUR + 1000, 'at most an hour')
  const profile = await call(app, 'GET', '/api/v1/profile', { cookie: admin.cookie() })
  t.same([profile.statusCode, profile.json().name], [200, 'Mira Member'], 'reads answer as for the member')

  // The member's own sessions do not show it; an administrator's list of theirs does.
  const own = await call(app, 'GET', '/api/auth/list-sessions', { cookie: member.cookie })
  t.same(
    own.json().map((s: { impersonatedBy: string | null }) => s.impersonatedBy),
    [null],
  )
  const owner = await signedIn('owner')
  const listed = await owner.client.admin.listUserSessions({ userId: member.id })
  t.same(listed.data!.sessions.map((s) => s.impersonatedBy).sort(), [admin.user.id, null].sort())
  const impersonationId = started.data!.session.id
  t.ok((await liveSessionIds(member.id)).includes(impersonationId))

  // The member's export shows the impersonation session, never the administrator's session it came from.
  const exported = (await call(app, 'GET', '/api/v1/me/export', { cookie: member.cookie })).json()
  const row = exported.sessions.find((s: { id: string }) => s.id === impersonationId)
  t.same([row?.impersonatedBy, 'impersonatorSessionId' in row], [admin.user.id, false])

  const stopped = await admin.client.admin.stopImpersonating()
  t.equal(stopped.error, null)
  t.same([stopped.data!.user.id, stopped.data!.session.id], [admin.user.id, adminSession.id])
  t.notOk(admin.jar.has('better-auth.admin_session'), 'the kept session cookie is cleared')
  const back = (await admin.client.getSession()).data!
  t.same([back.user.id, back.session.id, back.session.impersonatedBy], [admin.user.id, adminSession.id, null])
  t.notOk((await liveSessionIds(member.id)).includes(impersonationId), 'the impersonation session ended')

  // The audit trail: who, whom, start and end.
  const [start] = await auditEvents(app.db, { action: 'admin.user.impersonated', targetId: member.id })
  t.equal(start?.actor_id, admin.user.id)
  t.equal((start!.details as { sessionId: string }).sessionId, impersonationId)
  const [end] = await auditEvents(app.db, { action: 'admin.user.impersonation_ended', targetId: member.id })
  t.equal(end?.actor_id, admin.user.id)
  // The member's security activity says an administrator did it, never which.
  const events = await call(app, 'GET', '/api/v1/me/security-events', { cookie: member.cookie })
  const impersonated = events.json().items.filter((e: { kind: string }) => e.kind === 'impersonated')
  t.same(
    impersonated.map((e: { byAdministrator: boolean }) => e.byAdministrator),
    [true],
  )
  t.notOk(JSON.stringify(events.json()).includes(admin.user.id))
  // And a security notice, with its "this wasn't me" link.
  const notice = await smtp.inbox.notices.next(member.email)
  t.equal(notice.subject, 'Security notice: an administrator opened your account')
  t.match(notice.text, /\/api\/auth\/security-notice\?token=/)
})

t.test('support mode is read-only: every change is 403 IMPERSONATION_READ_ONLY, through every wire', async (t) => {
  const admin = await signedIn('admin')
  const member = await signUp(app)
  await admin.client.admin.impersonateUser({ userId: member.id })
  const name = await admin.client.updateUser({ name: 'Changed by support' })
  t.same([name.error?.status, name.error?.code], [403, 'IMPERSONATION_READ_ONLY'])
  const password = await admin.client.changePassword({ currentPassword: member.password, newPassword: 'another long passphrase' })
  t.equal(password.error?.code, 'IMPERSONATION_READ_ONLY')
  const entry = await call(app, 'POST', '/api/v1/journal/entries', { cookie: admin.cookie(), body: { content: 'x', mood: 3 } })
  t.same([entry.statusCode, entry.json().code], [403, 'IMPERSONATION_READ_ONLY'])
  const rpc = await call(app, 'POST', '/api/v1/journal/createEntry', {
    cookie: admin.cookie(),
    body: { json: { content: 'x', mood: 3 } },
  })
  t.same([rpc.statusCode, rpc.json().json.code], [403, 'IMPERSONATION_READ_ONLY'])
  // A read procedure carried by POST (RPCLink without the contract at run time) is a read.
  const read = await call(app, 'POST', '/api/v1/journal/listEntries', { cookie: admin.cookie(), body: { json: {} } })
  t.equal(read.statusCode, 200)
  t.equal(await app.db.selectFrom('journal_entry').where('user_id', '=', member.id).select('id').executeTakeFirst(), undefined)
  t.equal((await admin.client.admin.stopImpersonating()).error, null)
})

t.test('IMPERSONATION_ALLOWS_WRITES lets support act in the member name', async (t) => {
  const writable = await listeningApp({ IMPERSONATION_ALLOWS_WRITES: 'true' })
  const admin = await signedIn('admin', writable)
  const member = await signUp(writable.app)
  await admin.client.admin.impersonateUser({ userId: member.id })
  const entry = await call(writable.app, 'POST', '/api/v1/journal/entries', {
    cookie: admin.cookie(),
    body: { content: 'Written with the member', mood: 4 },
  })
  t.same([entry.statusCode, entry.json().userId], [201, member.id])
})

t.test('only an admin or owner impersonates, and only a member', async (t) => {
  const member = await signedIn('member')
  const other = await signUp(app)
  const refused = await member.client.admin.impersonateUser({ userId: other.id })
  t.same([refused.error?.status, refused.error?.code], [403, 'YOU_ARE_NOT_ALLOWED_TO_IMPERSONATE_USERS'])

  const owner = await signedIn('owner')
  const admin = await signedIn('admin')
  for (const [who, target] of [
    ['an owner, an admin', admin.user.id],
    ['an admin, an owner', owner.user.id],
    ['an admin, another admin', (await signUpWithRole(app, 'admin')).id],
    ['an admin, themselves', admin.user.id],
  ] as const) {
    const client = who.startsWith('an owner') ? owner.client : admin.client
    const res = await client.admin.impersonateUser({ userId: target })
    t.same([res.error?.status, res.error?.code], [403, 'YOU_CANNOT_IMPERSONATE_ADMINS'], who)
  }
  const byOwner = await owner.client.admin.impersonateUser({ userId: other.id })
  t.equal(impersonatorOf(byOwner.data!.session), owner.user.id, 'an owner may')
})

t.test('impersonate-user: its unhappy paths', async (t) => {
  const admin = await signedIn('admin')
  const member = await signUp(app)
  const unknown = await admin.client.admin.impersonateUser({ userId: 'no-such-user' })
  t.same([unknown.error?.status, unknown.error?.code], [404, 'USER_NOT_FOUND'])
  for (const body of [{}, { userId: '' }, { userId: 'x'.repeat(201) }, { userId: member.id, role: 'admin' }, { userId: 7 }]) {
    const res = await call(app, 'POST', '/api/auth/admin/impersonate-user', { cookie: admin.cookie(), body })
    t.same([res.statusCode, res.json().code], [400, 'VALIDATION_ERROR'], JSON.stringify(body))
  }
  const anonymous = await call(app, 'POST', '/api/auth/admin/impersonate-user', { body: { userId: member.id } })
  t.same([anonymous.statusCode, anonymous.json().code], [401, 'UNAUTHORIZED'])
  const foreign = await call(app, 'POST', '/api/auth/admin/impersonate-user', {
    cookie: admin.cookie(),
    body: { userId: member.id },
    headers: { origin: 'https://evil.example' },
  })
  t.same([foreign.statusCode, foreign.json().code], [403, 'INVALID_ORIGIN'])
  const before = await liveSessionIds(member.id)
  await app.db.updateTable('user').set({ banned: true, ban_reason: 'spam' }).where('id', '=', member.id).execute()
  const banned = await admin.client.admin.impersonateUser({ userId: member.id })
  t.same([banned.error?.status, banned.error?.code], [403, 'BANNED_USER'])
  t.same(await liveSessionIds(member.id), before, 'nothing was opened')
  t.equal((await admin.client.getSession()).data?.user.id, admin.user.id, "the admin's session is untouched")
})

t.test('stop-impersonating: its unhappy paths', async (t) => {
  const admin = await signedIn('admin')
  const notImpersonating = await admin.client.admin.stopImpersonating()
  t.same([notImpersonating.error?.status, notImpersonating.error?.code], [400, 'BAD_REQUEST'])
  const anonymous = await call(app, 'POST', '/api/auth/admin/stop-impersonating', { body: {} })
  t.equal(anonymous.statusCode, 401)
  const member = await signUp(app)
  const { data } = await admin.client.admin.impersonateUser({ userId: member.id })
  const extra = await call(app, 'POST', '/api/auth/admin/stop-impersonating', { cookie: admin.cookie(), body: { userId: 'x' } })
  t.same([extra.statusCode, extra.json().code], [400, 'VALIDATION_ERROR'])
  // Without the kept cookie (another browser holding the impersonation's cookie): it ends, nothing comes back.
  const impersonation = admin.cookie()
  const elsewhere = await call(app, 'POST', '/api/auth/admin/stop-impersonating', { cookie: impersonation, body: {} })
  t.same([elsewhere.statusCode, elsewhere.json().code], [401, 'UNAUTHORIZED'])
  t.notOk((await liveSessionIds(member.id)).includes(data!.session.id))
  const after = await call(app, 'GET', '/api/auth/get-session', { cookie: impersonation })
  t.equal(after.json(), null, 'the impersonation ended')
})

t.test('stop-impersonating restores only the very session the impersonation was opened from', async (t) => {
  const admin = await signedIn('admin')
  // The same administrator's other session (another browser), and one of another administrator.
  const sameAdminElsewhere = adminBrowser(baseURL)
  t.equal((await sameAdminElsewhere.client.signIn.email({ email: admin.user.email, password: admin.user.password })).error, null)
  const otherAdmin = await signedIn('admin')
  for (const [who, kept] of [
    ['another session of the same administrator', sameAdminElsewhere],
    ['another administrator’s session', otherAdmin],
  ] as const) {
    const member = await signUp(app)
    const { data } = await admin.client.admin.impersonateUser({ userId: member.id })
    // The kept cookie swapped for another signed session cookie: it is not the one to give back.
    const keptToken = kept.jar.get('better-auth.session_token')!
    const cookie = `${admin.cookie()}; better-auth.admin_session=${keptToken}`
    const res = await call(app, 'POST', '/api/auth/admin/stop-impersonating', { cookie, body: {} })
    t.same([res.statusCode, res.json().code], [401, 'UNAUTHORIZED'], who)
    t.notOk(String(res.headers['set-cookie']).includes(keptToken), `${who} is not handed back`)
    t.notOk((await liveSessionIds(member.id)).includes(data!.session.id), 'the impersonation ended')
    t.equal((await kept.client.getSession()).data?.session.impersonatedBy, null, `${who} is untouched`)
    // The administrator's own session, kept aside, still comes back with its own cookie.
    admin.jar.set('better-auth.session_token', admin.jar.get('better-auth.admin_session')!)
    admin.jar.delete('better-auth.admin_session')
  }
  t.equal((await admin.client.getSession()).data?.user.id, admin.user.id)
})

t.test('stop-impersonating raced: a second stop, a revocation of the admin session, the hour running out', async (t) => {
  const owner = await signedIn('owner')
  const opened = async () => {
    const admin = await signedIn('admin')
    const member = await signUp(app)
    await admin.client.admin.impersonateUser({ userId: member.id })
    const cookie = `${admin.cookie()}; better-auth.admin_session=${admin.jar.get('better-auth.admin_session')}`
    const stop = () => call(app, 'POST', '/api/auth/admin/stop-impersonating', { cookie, body: {} })
    return { admin, member, stop }
  }
  const ended = (memberId: string) => auditEvents(app.db, { action: 'admin.user.impersonation_ended', targetId: memberId })

  // Two at once: one gives the session back, the other finds the impersonation gone; one end audited.
  const twice = await opened()
  const stops = await Promise.all([twice.stop(), twice.stop()])
  t.same(stops.map((r) => r.statusCode).sort(), [200, 401])
  t.equal((await ended(twice.member.id)).length, 1, 'ended once')

  // With a revocation of every session of the administrator: whichever wins, no session outlives it.
  const revoked = await opened()
  const [stop] = await Promise.all([revoked.stop(), owner.client.admin.revokeUserSessions({ userId: revoked.admin.user.id })])
  t.same(await liveSessionIds(revoked.admin.user.id), [], 'the administrator has no session left')
  const impersonations = await app.db
    .selectFrom('session')
    .select('id')
    .where('user_id', '=', revoked.member.id)
    .where('impersonated_by', 'is not', null)
    .execute()
  t.same(impersonations, [], 'nor the impersonation')
  const back = sessionCookieOf(stop)
  if (back)
    t.equal((await call(app, 'GET', '/api/auth/get-session', { cookie: back })).json(), null, 'a cookie handed back is dead')

  // Past the hour the impersonation has ended by itself: nothing to stop, nothing handed back.
  const late = await opened()
  offsetMs += 61 * 60 * 1000
  const res = await late.stop()
  t.same([res.statusCode, sessionCookieOf(res)], [401, undefined])
})

t.test('an impersonation lasts an hour at most and is never renewed', async (t) => {
  const admin = await signedIn('admin')
  const member = await signUp(app)
  await admin.client.admin.impersonateUser({ userId: member.id })
  const cookie = admin.cookie()
  offsetMs += 59 * 60 * 1000
  const still = await call(app, 'GET', '/api/auth/get-session', { cookie })
  t.equal(still.json()?.session.impersonatedBy, admin.user.id)
  t.notOk(String(still.headers['set-cookie'] ?? '').includes('session_token=s'), 'not renewed')
  offsetMs += 2 * 60 * 1000
  t.equal((await call(app, 'GET', '/api/auth/get-session', { cookie })).json(), null, 'over after an hour')
})

t.test("ending the admin's session ends their impersonations at once: a revocation, a ban", async (t) => {
  const owner = await signedIn('owner')
  for (const end of ['revoke', 'ban'] as const) {
    const admin = await signedIn('admin')
    const member = await signUp(app)
    const { data } = await admin.client.admin.impersonateUser({ userId: member.id })
    const cookie = admin.cookie()
    t.equal((await call(app, 'GET', '/api/auth/get-session', { cookie })).json()?.user.id, member.id)
    const res =
      end === 'revoke'
        ? await owner.client.admin.revokeUserSessions({ userId: admin.user.id })
        : await owner.client.admin.banUser({ userId: admin.user.id, banReason: 'left the company' })
    t.equal(res.error, null, end)
    t.equal((await call(app, 'GET', '/api/auth/get-session', { cookie })).json(), null, end)
    t.notOk((await liveSessionIds(member.id)).includes(data!.session.id), end)
  }
})

t.test('REQUIRE_ADMIN_TWO_FACTOR: the admin needs a session that passed a second factor', async (t) => {
  const strict = await listeningApp({ REQUIRE_ADMIN_TWO_FACTOR: 'true' })
  const admin = await signedIn('admin', strict)
  const member = await signUp(strict.app)
  const refused = await admin.client.admin.impersonateUser({ userId: member.id })
  t.same([refused.error?.status, refused.error?.code], [403, 'TWO_FACTOR_REQUIRED'])
  const { confirmed } = await enableTotp(
    strict.app,
    { id: admin.user.id, cookie: admin.cookie(), password: admin.user.password },
    clock.now(),
  )
  t.equal(confirmed.statusCode, 200)
  const started = await admin.client.admin.impersonateUser({ userId: member.id })
  t.equal(started.data?.user.id, member.id)
})
