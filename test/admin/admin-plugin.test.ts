// better-auth's admin plugin's user routes through its own client, adminClient(), as an admin panel
// calls them: the same rules as the admin procedures (test/admin/users.test.ts, ban.test.ts,
// roles.test.ts), in the plugin's wire, and the plugin's 403 codes for anyone else.
import t from 'tap'
import { buildTestApp, call, signUp, signUpWithRole, uniqueEmail } from '../helpers/app.js'
import { adminBrowser } from '../helpers/auth-client.js'
import { auditEvents } from '../helpers/expect.js'

const app = await buildTestApp()
await app.listen({ port: 0, host: '127.0.0.1' })
const baseURL = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`

async function signedIn(role: 'member' | 'admin' | 'owner') {
  const user = await signUpWithRole(app, role)
  const browser = adminBrowser(baseURL)
  const res = await browser.client.signIn.email({ email: user.email, password: user.password })
  if (res.error) throw new Error(`sign-in failed: ${res.error.message}`)
  return { ...browser, user }
}

const admin = await signedIn('admin')
const owner = await signedIn('owner')
const member = await signedIn('member')
const who = (res: { error: { status: number; code?: string } | null }) => [res.error?.status, res.error?.code]
/** A field adminClient()'s types do not name (our user's plan, role and suspension, list-users' limit and offset). */
const fields = (value: unknown) => value as Record<string, unknown>
const whoami = async (cookie: string) => (await call(app, 'GET', '/api/v1/whoami', { cookie })).statusCode

t.test('a member gets the plugin 403 code of each route; nobody signed in gets 401', async (t) => {
  const a = member.client.admin
  const id = admin.user.id
  const refusals = [
    [await a.listUsers({ query: {} }), 'YOU_ARE_NOT_ALLOWED_TO_LIST_USERS'],
    [await a.getUser({ query: { id } }), 'YOU_ARE_NOT_ALLOWED_TO_GET_USER'],
    [await a.setRole({ userId: id, role: 'member' as 'admin' }), 'YOU_ARE_NOT_ALLOWED_TO_CHANGE_USERS_ROLE'],
    [await a.banUser({ userId: id }), 'YOU_ARE_NOT_ALLOWED_TO_BAN_USERS'],
    [await a.unbanUser({ userId: id }), 'YOU_ARE_NOT_ALLOWED_TO_BAN_USERS'],
    [await a.listUserSessions({ userId: id }), 'YOU_ARE_NOT_ALLOWED_TO_LIST_USERS_SESSIONS'],
    [await a.revokeUserSession({ sessionToken: 'x' }), 'YOU_ARE_NOT_ALLOWED_TO_REVOKE_USERS_SESSIONS'],
    [await a.revokeUserSessions({ userId: id }), 'YOU_ARE_NOT_ALLOWED_TO_REVOKE_USERS_SESSIONS'],
    [await a.removeUser({ userId: id }), 'YOU_ARE_NOT_ALLOWED_TO_DELETE_USERS'],
    [await a.impersonateUser({ userId: id }), 'YOU_ARE_NOT_ALLOWED_TO_IMPERSONATE_USERS'],
  ] as const
  for (const [res, code] of refusals) t.same(who(res), [403, code], code)
  t.equal(await whoami(admin.cookie()), 200, 'nothing happened to the admin')
  for (const path of ['list-users', 'get-user?id=x']) {
    t.equal((await call(app, 'GET', `/api/auth/admin/${path}`)).statusCode, 401, path)
  }
  for (const path of ['set-role', 'ban-user', 'unban-user', 'list-user-sessions', 'revoke-user-sessions', 'remove-user']) {
    const res = await call(app, 'POST', `/api/auth/admin/${path}`, { body: { userId: member.user.id } })
    t.same([res.statusCode, res.json().code], [401, 'UNAUTHORIZED'], path)
  }
})

t.test('list-users: search by email or name, limit, offset, sort, {users, total}; audited', async (t) => {
  const tag = `zq${Date.now()}`
  const names = ['Ada', 'Bea', 'Cy']
  const users = []
  for (const name of names)
    users.push(await signUp(app, { name: `${name} ${tag}`, email: uniqueEmail(`${tag}-${name.toLowerCase()}`) }))
  const byEmail = await admin.client.admin.listUsers({ query: { searchValue: `${tag}-bea`, searchField: 'email' } })
  t.same([byEmail.data!.total, byEmail.data!.users.map((u) => u.id)], [1, [users[1]!.id]])
  const byName = await admin.client.admin.listUsers({
    query: {
      searchValue: tag,
      searchField: 'name',
      searchOperator: 'ends_with',
      sortBy: 'name',
      sortDirection: 'desc',
      limit: 2,
      offset: 1,
    },
  })
  t.same(
    [byName.data!.total, fields(byName.data).limit, fields(byName.data).offset, byName.data!.users.map((u) => u.name)],
    [3, 2, 1, [`Bea ${tag}`, `Ada ${tag}`]],
  )
  const user = fields(byName.data!.users[0])
  t.same([user.banned, user.banReason, user.banExpires], [false, null, null], 'the plugin fields of a user')
  t.notOk('passwordResetRequired' in user || 'credentialEpoch' in user)
  // % and _ are literal characters, not patterns.
  const wild = await admin.client.admin.listUsers({ query: { searchValue: '%', searchField: 'email' } })
  t.equal(wild.data!.total, 0)
  const admins = await admin.client.admin.listUsers({ query: { filterField: 'role', filterValue: 'owner', limit: 100 } })
  t.ok(admins.data!.users.every((u) => fields(u).role === 'owner') && admins.data!.total >= 1)
  t.ok((await auditEvents(app.db, { action: 'admin.users.listed', actorId: admin.user.id })).length >= 3)

  for (const query of [
    'limit=0',
    'limit=101',
    'offset=-1',
    'sortBy=password',
    'searchField=role',
    'filterField=role',
    'filterField=role&filterValue=king',
    'filterOperator=lt&filterField=role&filterValue=admin',
    'cursor=abc',
  ]) {
    const res = await call(app, 'GET', `/api/auth/admin/list-users?${query}`, { cookie: admin.cookie() })
    t.same([res.statusCode, res.json().code], [400, 'VALIDATION_ERROR'], query)
  }
})

t.test('get-user: the user with the suspension; 404 USER_NOT_FOUND; audited', async (t) => {
  const res = await admin.client.admin.getUser({ query: { id: member.user.id } })
  t.same([res.data?.id, fields(res.data).banned], [member.user.id, false])
  t.same(who(await admin.client.admin.getUser({ query: { id: 'nobody' } })), [404, 'USER_NOT_FOUND'])
  const bad = await call(app, 'GET', '/api/auth/admin/get-user', { cookie: admin.cookie() })
  t.same([bad.statusCode, bad.json().code], [400, 'VALIDATION_ERROR'])
  t.ok((await auditEvents(app.db, { action: 'admin.user.viewed', targetId: member.user.id })).length >= 1)
})

t.test('set-role: the role rules of the setUserRole procedure', async (t) => {
  const target = await signUp(app)
  const promoted = await admin.client.admin.setRole({ userId: target.id, role: 'admin' })
  t.equal(fields(promoted.data!.user).role, 'admin')
  const [event] = await auditEvents(app.db, { action: 'admin.user.role_changed', targetId: target.id })
  t.same(event?.details, { via: 'set-role', before: { role: 'member' }, after: { role: 'admin' }, sessionsRevoked: 0 })
  // Demoting an admin ends their sessions, as every demotion does.
  const demoted = await admin.client.admin.setRole({ userId: target.id, role: ['member' as 'admin'] })
  t.equal(fields(demoted.data!.user).role, 'member')
  t.equal(await whoami(target.cookie), 401)

  t.same(
    who(await owner.client.admin.setRole({ userId: target.id, role: 'owner' as 'admin' })),
    [403, 'FORBIDDEN'],
    'owner: the command line',
  )
  t.same(
    who(await admin.client.admin.setRole({ userId: admin.user.id, role: 'member' as 'admin' })),
    [403, 'FORBIDDEN'],
    'yourself',
  )
  t.same(who(await admin.client.admin.setRole({ userId: owner.user.id, role: 'admin' })), [403, 'FORBIDDEN'], 'an owner')
  t.same(who(await admin.client.admin.setRole({ userId: target.id, role: 'user' as 'admin' })), [
    400,
    'YOU_ARE_NOT_ALLOWED_TO_SET_NON_EXISTENT_VALUE',
  ])
  t.same(who(await admin.client.admin.setRole({ userId: 'nobody', role: 'admin' })), [404, 'USER_NOT_FOUND'])
  for (const body of [
    { userId: target.id },
    { userId: target.id, role: ['admin', 'member'] },
    { userId: target.id, role: 'admin', x: 1 },
  ]) {
    const res = await call(app, 'POST', '/api/auth/admin/set-role', { cookie: admin.cookie(), body })
    t.same([res.statusCode, res.json().code], [400, 'VALIDATION_ERROR'], JSON.stringify(body))
  }
})

t.test('ban-user and unban-user: every session ends at once; sign-in is 403 BANNED_USER until unbanned', async (t) => {
  const target = await signUp(app)
  const before = Date.now()
  const banned = await admin.client.admin.banUser({ userId: target.id, banReason: 'spam', banExpiresIn: 3600 })
  const user = fields(banned.data!.user)
  t.same([user.banned, user.banReason], [true, 'spam'])
  t.ok(Math.abs(new Date(user.banExpires as string).getTime() - (before + 3600_000)) < 5000)
  t.equal(await whoami(target.cookie), 401, 'its sessions ended')
  const browser = adminBrowser(baseURL)
  const signIn = await browser.client.signIn.email({ email: target.email, password: target.password })
  t.same(who(signIn), [403, 'BANNED_USER'])
  t.equal((await auditEvents(app.db, { action: 'admin.user.banned', targetId: target.id })).length, 1)

  const unbanned = await admin.client.admin.unbanUser({ userId: target.id })
  t.equal(fields(unbanned.data!.user).banned, false)
  t.equal((await browser.client.signIn.email({ email: target.email, password: target.password })).error, null)

  const noReason = await admin.client.admin.banUser({ userId: target.id })
  t.same(
    [
      (noReason.data!.user as unknown as { banReason: string }).banReason,
      (noReason.data!.user as unknown as { banExpires: null }).banExpires,
    ],
    ['No reason', null],
  )
  t.same(who(await admin.client.admin.banUser({ userId: admin.user.id })), [403, 'FORBIDDEN'], 'yourself')
  t.same(who(await admin.client.admin.banUser({ userId: owner.user.id })), [403, 'FORBIDDEN'], 'an owner')
  t.same(who(await admin.client.admin.banUser({ userId: 'nobody' })), [404, 'USER_NOT_FOUND'])
  t.same(who(await admin.client.admin.unbanUser({ userId: 'nobody' })), [404, 'USER_NOT_FOUND'])
  for (const body of [
    { userId: target.id, banExpiresIn: 0 },
    { userId: target.id, banExpiresIn: '60' },
    { userId: target.id, banReason: '' },
    { userId: target.id, banReason: 'x'.repeat(501) },
    { userId: target.id, reason: 'spam' },
  ]) {
    const res = await call(app, 'POST', '/api/auth/admin/ban-user', { cookie: admin.cookie(), body })
    t.same([res.statusCode, res.json().code], [400, 'VALIDATION_ERROR'], JSON.stringify(body))
  }
})

t.test('list-user-sessions, revoke-user-session, revoke-user-sessions', async (t) => {
  const target = await signUp(app)
  const second = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: target.email, password: target.password } })
  const secondCookie = String(second.headers['set-cookie']).match(/better-auth\.session_token=[^;]+/)![0]
  const listed = await admin.client.admin.listUserSessions({ userId: target.id })
  t.equal(listed.data!.sessions.length, 2)
  t.notOk(JSON.stringify(listed.data).includes('token'), 'no token is ever shown')
  t.ok((await auditEvents(app.db, { action: 'admin.user.sessions_listed', targetId: target.id })).length)
  t.same(who(await admin.client.admin.listUserSessions({ userId: 'nobody' })), [404, 'USER_NOT_FOUND'])

  const own = (await call(app, 'GET', '/api/auth/list-sessions', { cookie: target.cookie })).json()
  const firstId = own.find((s: { current: boolean }) => s.current).id
  t.same((await admin.client.admin.revokeUserSession({ sessionToken: firstId })).data, { success: true })
  t.same([await whoami(target.cookie), await whoami(secondCookie)], [401, 200], 'that session only')
  t.same(who(await admin.client.admin.revokeUserSession({ sessionToken: firstId })), [404, 'NOT_FOUND'], 'gone')
  const ownerSession = (await call(app, 'GET', '/api/auth/list-sessions', { cookie: owner.cookie() })).json()[0].id
  t.same(who(await admin.client.admin.revokeUserSession({ sessionToken: ownerSession })), [403, 'FORBIDDEN'], "an owner's")
  const events = (await call(app, 'GET', '/api/v1/me/security-events', { cookie: secondCookie })).json().items
  t.ok(
    events.some((e: { kind: string; byAdministrator: boolean }) => e.kind === 'sessions_revoked_by_admin' && e.byAdministrator),
  )

  t.same((await admin.client.admin.revokeUserSessions({ userId: target.id })).data, { success: true })
  t.equal(await whoami(secondCookie), 401)
  t.same(who(await admin.client.admin.revokeUserSessions({ userId: 'nobody' })), [404, 'USER_NOT_FOUND'])
  t.same(who(await admin.client.admin.revokeUserSessions({ userId: owner.user.id })), [403, 'FORBIDDEN'])
  const bad = await call(app, 'POST', '/api/auth/admin/revoke-user-session', {
    cookie: admin.cookie(),
    body: { sessionToken: 'x'.repeat(65) },
  })
  t.same([bad.statusCode, bad.json().code], [400, 'VALIDATION_ERROR'])
})

t.test('remove-user: the anonymising deletion of an account; never an owner or yourself', async (t) => {
  const target = await signUp(app)
  await call(app, 'POST', '/api/v1/consent', { cookie: target.cookie, body: { type: 'terms', version: '1', granted: true } })
  t.same((await admin.client.admin.removeUser({ userId: target.id })).data, { success: true })
  t.equal(await app.db.selectFrom('user').where('id', '=', target.id).select('id').executeTakeFirst(), undefined)
  t.equal(await whoami(target.cookie), 401)
  const consents = await app.db.selectFrom('consent_record').select(['user_id', 'ip']).where('version', '=', '1').execute()
  t.ok(consents.length && consents.every((c) => c.user_id !== target.id))
  const [removed] = await auditEvents(app.db, { action: 'admin.user.removed', targetId: target.id })
  t.same([removed?.actor_id, removed?.details], [admin.user.id, {}])
  t.same(who(await admin.client.admin.removeUser({ userId: target.id })), [404, 'USER_NOT_FOUND'])
  t.same(who(await admin.client.admin.removeUser({ userId: admin.user.id })), [403, 'FORBIDDEN'], 'yourself')
  t.same(who(await admin.client.admin.removeUser({ userId: owner.user.id })), [403, 'FORBIDDEN'], 'an owner')
  const bad = await call(app, 'POST', '/api/auth/admin/remove-user', { cookie: admin.cookie(), body: { id: target.id } })
  t.same([bad.statusCode, bad.json().code], [400, 'VALIDATION_ERROR'])
})
