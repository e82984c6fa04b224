// The web front end's way in: oRPC 1.14's RPCLink drives EVERY procedure of the contract the service
// ships, over a real socket, as the front end does (url {api}/api/v1, GET for get*/list*/find*/
// search* and POST for the rest, the session cookie, a trusted Origin). Each procedure is walked
// from the contract itself, so a new one without a scenario here fails, and each gets its unhappy
// paths: no session, wrong role, someone else's record, bad input, unknown keys, a foreign Origin,
// an encoded path and a GET on a procedure that changes state. A refused call changes nothing.
import { createORPCClient, ORPCError } from '@orpc/client'
import { RPCLink } from '@orpc/client/fetch'
import { type ContractRouterClient, inferRPCMethodFromContractRouter } from '@orpc/contract'
import { traverseContractProcedures } from '@orpc/server'
import t, { type Test } from 'tap'
import { contract } from '../helpers/contract.js'
import { buildTestApp, signUp, signUpWithRole, type TestUser, WEB_ORIGIN } from '../helpers/app.js'
import { tablesFingerprint } from '../helpers/expect.js'

const EVIL = 'https://evil.example'
const app = await buildTestApp({
  env: { PAYMENT_GATEWAY: 'sandbox', RATE_LIMIT_PASSWORD_CHECKS_PER_MINUTE: '1000000' },
})
await app.listen({ port: 0, host: '127.0.0.1' })
const API = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`

type Client = ContractRouterClient<typeof contract>
const READ_LIKE = /^(?:get|find|list|search)(?:[A-Z].*)?$/

/** The front end's client: oRPC's documented request-method rule. */
function clientFor(user?: TestUser, options: { origin?: string; url?: string; method?: 'GET' | 'POST' | 'infer' } = {}): Client {
  const headers: Record<string, string> = { origin: options.origin ?? WEB_ORIGIN }
  if (user) headers.cookie = user.cookie
  const forced = options.method
  const method =
    forced === 'infer'
      ? inferRPCMethodFromContractRouter(contract)
      : (_: unknown, path: readonly string[]) => forced ?? (READ_LIKE.test(path.at(-1)!) ? 'GET' : 'POST')
  return createORPCClient(new RPCLink({ url: options.url ?? `${API}/api/v1`, headers, method }))
}

/** Calls the procedure at `path` of a client. */
function callAt(client: Client, path: readonly string[], input: unknown): Promise<unknown> {
  let node: unknown = client
  for (const key of path) node = (node as Record<string, unknown>)[key]
  return (node as (input: unknown) => Promise<unknown>)(input)
}

async function rejection(call: Promise<unknown>): Promise<ORPCError<string, unknown>> {
  try {
    await call
  } catch (err) {
    if (err instanceof ORPCError) return err
    throw err
  }
  throw new Error('the call succeeded')
}

function refusedWith(t: Test, err: ORPCError<string, unknown>, code: string, status: number, name: string) {
  t.same([err.code, err.status, err.defined], [code, status, false], name)
}

// Every row of every table, hashed: a refused call must leave it as it was.
const TABLES = [
  'user',
  'session',
  'account',
  'journal_entry',
  'compatibility_result',
  'deep_insights_purchase',
  'payment',
  'usage_counter',
  'consent_record',
  'audit_event',
]
const fingerprint = () => tablesFingerprint(app.db, TABLES)

const member = await signUp(app, { name: 'Rpc Member' })
const other = await signUp(app, { name: 'Rpc Other' })
const admin = await signUpWithRole(app, 'admin')
const target = await signUp(app, { name: 'Admin Target' })
const leaving = await signUp(app, { name: 'Leaving' })
const premium = await signUp(app, { name: 'Premium' })
await app.db.updateTable('user').set({ plan: 'premium_plus' }).where('id', '=', premium.id).execute()

const memberClient = clientFor(member)
const otherClient = clientFor(other)

// Records of the member, for the procedures that take an id, and one of someone else's each.
const created = {
  entry: (await memberClient.journal.createEntry({ content: 'First entry', mood: 3 })) as { id: string },
  entryToDelete: (await memberClient.journal.createEntry({ content: 'To delete', mood: 2 })) as { id: string },
  result: (await clientFor(premium).compatibility.createResult({
    partner: { name: 'Bima', birthDate: '1992-11-09' },
    systems: ['bazi'],
    score: 71,
    summary: { lite: true },
  })) as { id: string },
  payment: await memberClient.payment.createCheckout({ product: 'premium_month', returnUrl: '/done' }),
}

/** The value at `keys` inside a procedure's answer (undefined where there is none). */
const at = (value: unknown, ...keys: Array<string | number>): unknown =>
  keys.reduce<unknown>((v, key) => (v as Record<string | number, unknown> | null | undefined)?.[key], value)

interface Scenario {
  /** Who calls it when it should work. */
  as: TestUser
  input: unknown
  check(t: Test, output: unknown): void
  /** An input naming someone else's record: 404 to the caller. */
  othersRecord?: { as: TestUser; input: unknown }
}

const isDate = (t: Test, value: unknown, name: string) =>
  t.ok(value instanceof Date && !Number.isNaN(value.getTime()), `${name} is a Date`)

/** An administrator's call on the target user: the input besides its id; what the answer shows besides the id. */
const onTarget = (input: object, shows: object): Scenario => ({
  as: admin,
  input: { id: target.id, ...input },
  check: (t, user) => t.match(user, { id: target.id, ...shows }),
})

const scenarios: Record<string, Scenario> = {
  getProfile: {
    as: member,
    input: undefined,
    check: (t, p) => {
      t.match(p, { id: member.id, name: 'Rpc Member', email: member.email })
      isDate(t, at(p, 'createdAt'), 'createdAt')
    },
  },
  updateProfile: {
    as: member,
    input: { name: 'Rpc Renamed', birthDate: '1990-04-01', timezone: 'Asia/Jakarta' },
    check: (t, p) => {
      t.match(p, { name: 'Rpc Renamed', birthDate: '1990-04-01', timezone: 'Asia/Jakarta' })
      isDate(t, at(p, 'updatedAt'), 'updatedAt')
    },
  },
  getPlanAndUsage: {
    as: member,
    input: undefined,
    check: (t, plan) => {
      t.equal(at(plan, 'plan'), 'free')
      t.equal(at(plan, 'planExpiresAt'), null)
      for (const i of [0, 1, 2]) isDate(t, at(plan, 'usage', i, 'resetsAt'), `usage[${i}].resetsAt`)
    },
  },
  'usage.increment': {
    as: member,
    input: { metric: 'aiMessages' },
    check: (t, r) => {
      t.match(r, { metric: 'aiMessages', used: 1, limit: 10, remaining: 9 })
      isDate(t, at(r, 'resetsAt'), 'resetsAt')
    },
  },
  'journal.createEntry': {
    as: member,
    input: { content: 'Through RPCLink', mood: 4, tags: ['rpc'] },
    check: (t, e) => {
      t.match(e, { userId: member.id, content: 'Through RPCLink', mood: 4, tags: ['rpc'], entryDate: /^\d{4}-\d{2}-\d{2}$/ })
      isDate(t, at(e, 'createdAt'), 'createdAt')
    },
  },
  'journal.getEntry': {
    as: member,
    input: { id: created.entry.id },
    check: (t, e) => {
      t.match(e, { id: created.entry.id, content: 'First entry' })
      isDate(t, at(e, 'createdAt'), 'createdAt')
    },
    othersRecord: { as: other, input: { id: created.entry.id } },
  },
  'journal.listEntries': {
    as: member,
    input: { limit: 1 },
    check: (t, page) => {
      t.equal(at(page, 'items', 'length'), 1)
      t.type(at(page, 'nextCursor'), 'string')
      isDate(t, at(page, 'items', 0, 'createdAt'), 'items[0].createdAt')
    },
  },
  'journal.updateEntry': {
    as: member,
    input: { id: created.entry.id, mood: 5 },
    check: (t, e) => t.match(e, { id: created.entry.id, mood: 5 }),
    othersRecord: { as: other, input: { id: created.entry.id, mood: 1 } },
  },
  'journal.deleteEntry': {
    as: member,
    input: { id: created.entryToDelete.id },
    check: (t, out) => t.equal(out, undefined),
    othersRecord: { as: other, input: { id: created.entry.id } },
  },
  'journal.getTodayPrompt': {
    as: member,
    input: { locale: 'id', date: '2026-03-04' },
    check: (t, p) => t.match(p, { date: '2026-03-04', locale: 'id', text: String, id: String }),
  },
  'compatibility.createResult': {
    as: member,
    input: { partner: { name: 'Ayu', birthDate: '1995-01-02' }, systems: ['numerology'], score: 64, summary: { a: 1 } },
    check: (t, r) => {
      t.match(r, { userId: member.id, score: 64, deepInsights: null, deepInsightsUnlocked: false })
      isDate(t, at(r, 'createdAt'), 'createdAt')
    },
  },
  'compatibility.getResult': {
    as: premium,
    input: { id: created.result.id },
    check: (t, r) => t.match(r, { id: created.result.id, score: 71 }),
    othersRecord: { as: member, input: { id: created.result.id } },
  },
  'compatibility.listResults': {
    as: premium,
    input: {},
    check: (t, page) => {
      t.equal(at(page, 'items', 'length'), 1)
      isDate(t, at(page, 'items', 0, 'updatedAt'), 'items[0].updatedAt')
    },
  },
  'compatibility.unlockDeepInsights': {
    as: premium,
    input: { id: created.result.id },
    check: (t, r) => t.match(r, { id: created.result.id, deepInsightsUnlocked: true }),
    othersRecord: { as: member, input: { id: created.result.id } },
  },
  'compatibility.saveDeepInsights': {
    as: premium,
    input: { id: created.result.id, content: { insight: 'deep' } },
    check: (t, r) => t.match(r, { id: created.result.id, deepInsights: { insight: 'deep' } }),
    othersRecord: { as: member, input: { id: created.result.id, content: {} } },
  },
  'payment.createCheckout': {
    as: member,
    input: { product: 'premium_month', returnUrl: '/done' },
    check: (t, c) => {
      t.match(c, { provider: 'sandbox', paymentId: String, redirectUrl: /^http/ })
      isDate(t, at(c, 'expiresAt'), 'expiresAt')
    },
    othersRecord: { as: member, input: { product: 'deep_insights', resultId: created.result.id, returnUrl: '/done' } },
  },
  'payment.verifyPayment': {
    as: member,
    input: { paymentId: created.payment.paymentId },
    check: (t, v) => t.match(v, { paymentId: created.payment.paymentId, status: 'pending', grantedAt: null }),
    othersRecord: { as: other, input: { paymentId: created.payment.paymentId } },
  },
  'payment.listPayments': {
    as: member,
    input: {},
    check: (t, page) => {
      t.match(at(page, 'items'), Array)
      t.ok(
        (at(page, 'items') as unknown[]).some((p) => at(p, 'id') === created.payment.paymentId),
        'with the checkout made before',
      )
      isDate(t, at(page, 'items', 0, 'expiresAt'), 'items[0].expiresAt')
    },
  },
  'admin.listUsers': {
    as: admin,
    input: { email: target.email },
    check: (t, page) => {
      t.match(at(page, 'items'), [{ id: target.id, banned: false }])
      isDate(t, at(page, 'items', 0, 'createdAt'), 'items[0].createdAt')
    },
  },
  'admin.getUser': onTarget({}, { counts: { sessions: Number } }),
  'admin.makeUserAdmin': onTarget({}, { role: 'admin' }),
  'admin.setUserRole': onTarget({ role: 'member' }, { role: 'member' }),
  'admin.setUserPremiumPlus': {
    as: admin,
    input: { id: target.id, expiresAt: '2999-01-01T00:00:00.000Z' },
    check: (t, u) => {
      t.match(u, { id: target.id, plan: 'premium_plus' })
      isDate(t, at(u, 'planExpiresAt'), 'planExpiresAt')
    },
  },
  'admin.setUserPlan': onTarget({ plan: 'free' }, { plan: 'free' }),
  'admin.revokeUserSessions': {
    as: admin,
    input: { id: target.id },
    check: (t, r) => t.match(r, { revoked: Number }),
  },
  'admin.removeUserSecondFactor': {
    as: admin,
    input: { id: target.id },
    check: (t, r) => t.match(r, { twoFactorRemoved: false, passkeysRemoved: 0, sessionsRevoked: Number }),
  },
  'admin.banUser': {
    as: admin,
    input: { id: target.id, reason: 'Spam', expiresAt: '2999-01-01T00:00:00.000Z' },
    check: (t, u) => {
      t.match(u, { id: target.id, banned: true, banReason: 'Spam' })
      isDate(t, at(u, 'banExpiresAt'), 'banExpiresAt')
    },
  },
  'admin.unbanUser': onTarget({}, { banned: false, banExpiresAt: null }),
  'admin.getUsageAnalytics': {
    as: admin,
    input: {},
    check: (t, a) => t.match(a, { users: { total: Number }, activeSessions: Number }),
  },
  'admin.listAuditEvents': {
    as: admin,
    input: { targetId: target.id, limit: 100 },
    check: (t, page) => {
      t.ok((at(page, 'items', 'length') as number) > 0)
      isDate(t, at(page, 'items', 0, 'at'), 'items[0].at')
    },
  },
  'consent.recordConsent': {
    as: member,
    input: { type: 'terms', version: '2026-01', granted: true },
    check: (t, r) => {
      t.match(r, { type: 'terms', version: '2026-01', granted: true })
      isDate(t, at(r, 'createdAt'), 'createdAt')
    },
  },
  'consent.getConsents': {
    as: member,
    input: undefined,
    check: (t, c) => {
      t.match(at(c, 'current', 'terms'), { granted: true, version: '2026-01' })
      isDate(t, at(c, 'current', 'terms', 'at'), 'current.terms.at')
    },
  },
  'me.exportMyData': {
    as: member,
    input: undefined,
    check: (t, d) => {
      isDate(t, at(d, 'exportedAt'), 'exportedAt')
      t.ok((at(d, 'journalEntries', 'length') as number) >= 1)
      isDate(t, at(d, 'journalEntries', 0, 'createdAt'), 'journalEntries[0].createdAt')
    },
  },
  'me.listSecurityEvents': {
    as: member,
    input: { limit: 1 },
    check: (t, page) => {
      t.match(at(page, 'items'), [{ kind: String, byAdministrator: false }])
      t.equal(at(page, 'items', 'length'), 1)
      t.type(at(page, 'nextCursor'), 'string')
      isDate(t, at(page, 'items', 0, 'at'), 'items[0].at')
    },
  },
  'me.deleteMyAccount': {
    as: leaving,
    input: { password: leaving.password },
    check: (t, out) => t.equal(out, undefined),
  },
}

const procedures: Array<{ path: string[]; name: string; method: string; access: unknown }> = []
traverseContractProcedures({ router: contract, path: [] }, ({ contract: procedure, path }) => {
  const { route, meta } = procedure['~orpc'] as { route: { method?: string }; meta: { policy?: { access?: unknown } } }
  procedures.push({ path: [...path], name: path.join('.'), method: route.method!, access: meta.policy?.access })
})
const readLike = (p: { path: string[] }) => READ_LIKE.test(p.path.at(-1)!)

t.test('every procedure of the contract has its scenario here', async (t) => {
  t.same(procedures.map((p) => p.name).sort(), Object.keys(scenarios).sort())
  for (const p of procedures) {
    // RPCLink's rule sends these by GET: the procedure must allow it, or the front end gets 405.
    if (readLike(p)) t.equal(p.method, 'GET', `${p.name} is declared GET`)
  }
})

t.test('the contract as written drives them too (inferRPCMethodFromContractRouter)', async (t) => {
  const inferred = clientFor(member, { method: 'infer' })
  const entry = await inferred.journal.createEntry({ content: 'Inferred', mood: 3 })
  t.match(await inferred.journal.updateEntry({ id: entry.id, mood: 1 }), { mood: 1 }, 'PATCH')
  t.equal(await inferred.journal.deleteEntry({ id: entry.id }), undefined, 'DELETE')
  t.match(await inferred.getProfile(), { id: member.id }, 'GET')
})

t.test('no session: 401 UNAUTHORIZED on every procedure, nothing changed', async (t) => {
  const before = await fingerprint()
  const anonymous = clientFor()
  for (const p of procedures) {
    const err = await rejection(callAt(anonymous, p.path, scenarios[p.name]!.input))
    refusedWith(t, err, 'UNAUTHORIZED', 401, p.name)
  }
  t.equal(await fingerprint(), before, 'nothing was written')
})

t.test('wrong role: a member gets 403 FORBIDDEN on every admin procedure, nothing changed', async (t) => {
  const admins = procedures.filter((p) => typeof p.access === 'object')
  t.same(
    admins.map((p) => p.name),
    procedures.filter((p) => p.path[0] === 'admin').map((p) => p.name),
    'exactly the admin router declares roles',
  )
  const before = await fingerprint()
  for (const p of admins) {
    refusedWith(t, await rejection(callAt(memberClient, p.path, scenarios[p.name]!.input)), 'FORBIDDEN', 403, p.name)
  }
  t.equal(await fingerprint(), before, 'nothing was written')
})

t.test("someone else's record: 404 NOT_FOUND, as its REST twin says, nothing changed", async (t) => {
  const owned = procedures.filter((p) => scenarios[p.name]!.othersRecord)
  t.ok(owned.length >= 8, `${owned.length} procedures take a record's id`)
  const before = await fingerprint()
  for (const p of owned) {
    const { as, input } = scenarios[p.name]!.othersRecord!
    refusedWith(t, await rejection(callAt(clientFor(as), p.path, input)), 'NOT_FOUND', 404, p.name)
  }
  t.equal(await fingerprint(), before, 'nothing was written')

  // The same error as the REST twin, field for field.
  const rest = await fetch(`${API}/api/v1/journal/entries/${created.entry.id}`, {
    headers: { origin: WEB_ORIGIN, cookie: other.cookie },
  })
  const err = await rejection(otherClient.journal.getEntry({ id: created.entry.id }))
  const body = await rest.json()
  t.same(
    { code: err.code, status: err.status, message: err.message },
    { code: body.code, status: body.status, message: body.message },
  )
})

t.test('bad input and unknown keys: oRPC 400 BAD_REQUEST with data.issues, nothing changed', async (t) => {
  const before = await fingerprint()
  for (const p of procedures) {
    const s = scenarios[p.name]!
    const client = clientFor(s.as)
    const wrongType = await rejection(callAt(client, p.path, 42))
    refusedWith(t, wrongType, 'BAD_REQUEST', 400, `${p.name}: input 42`)
    t.match(wrongType.data, { issues: [{ message: String }] }, `${p.name}: issues`)
    const withUnknown = { ...(s.input as object | undefined), unknownKey: 1, role: 'owner' }
    const unknown = await rejection(callAt(client, p.path, withUnknown))
    refusedWith(t, unknown, 'BAD_REQUEST', 400, `${p.name}: unknown keys`)
    t.match(unknown.data, { issues: [{ code: 'unrecognized_keys' }] }, `${p.name}: named as unknown keys`)
  }
  t.equal(await fingerprint(), before, 'nothing was written')
})

t.test('a rule the schema cannot hold reads as a failed schema too', async (t) => {
  const err = await rejection(memberClient.updateProfile({ birthDate: '2999-01-01' }))
  refusedWith(t, err, 'BAD_REQUEST', 400, 'a birth date in the future')
  t.match(err.data, { issues: [{ path: ['birthDate'], message: 'Must not be in the future' }] })
})

t.test('a foreign Origin: 403 INVALID_ORIGIN on every procedure sent by POST, nothing changed', async (t) => {
  const before = await fingerprint()
  for (const p of procedures) {
    const s = scenarios[p.name]!
    const call = callAt(clientFor(s.as, { origin: EVIL, method: 'POST' }), p.path, s.input)
    refusedWith(t, await rejection(call), 'INVALID_ORIGIN', 403, p.name)
  }
  t.equal(await fingerprint(), before, 'nothing was written')
  // A GET is never state-changing; the foreign page gets no CORS grant to read the answer.
  const res = await fetch(`${API}/api/v1/getProfile`, { headers: { origin: EVIL, cookie: member.cookie } })
  t.equal(res.headers.get('access-control-allow-origin'), null, 'no CORS grant for a foreign Origin')
})

t.test('an encoded path is the same procedure, with the same checks', async (t) => {
  for (const url of [`${API}/%61pi/v1`, `${API}/api/%76%31`]) {
    t.match(await clientFor(member, { url }).getProfile(), { id: member.id }, `${url}: the procedure answers`)
    for (const p of procedures) {
      const s = scenarios[p.name]!
      refusedWith(
        t,
        await rejection(callAt(clientFor(undefined, { url }), p.path, s.input)),
        'UNAUTHORIZED',
        401,
        `${url} ${p.name}`,
      )
    }
    const before = await fingerprint()
    for (const p of procedures.filter((p) => !readLike(p))) {
      const s = scenarios[p.name]!
      const call = callAt(clientFor(s.as, { url, origin: EVIL }), p.path, s.input)
      refusedWith(t, await rejection(call), 'INVALID_ORIGIN', 403, `${url} ${p.name}, foreign Origin`)
    }
    t.equal(await fingerprint(), before, 'nothing was written')
  }
})

t.test('GET on a procedure that changes state: 405 METHOD_NOT_SUPPORTED, nothing changed', async (t) => {
  const changing = procedures.filter((p) => p.method !== 'GET')
  t.ok(changing.length >= 15, `${changing.length} procedures change state`)
  const before = await fingerprint()
  for (const p of changing) {
    const s = scenarios[p.name]!
    const err = await rejection(callAt(clientFor(s.as, { method: 'GET' }), p.path, s.input))
    refusedWith(t, err, 'METHOD_NOT_SUPPORTED', 405, p.name)
  }
  t.equal(await fingerprint(), before, 'nothing was written')
})

t.test('an unknown procedure is 404 NOT_FOUND', async (t) => {
  const client = clientFor(member) as unknown as Record<string, Record<string, (i?: unknown) => Promise<unknown>>>
  for (const call of [client.journal!.nope!(), client.nothingHere!.atAll!()]) {
    const err = await rejection(call)
    t.same([err.code, err.status], ['NOT_FOUND', 404])
  }
})

t.test('the RPC envelope, byte for byte, for an error raised before the procedure ran', async (t) => {
  const res = await fetch(`${API}/api/v1/getProfile`, { headers: { origin: WEB_ORIGIN } })
  t.equal(res.status, 401)
  t.same(await res.json(), { json: { defined: false, code: 'UNAUTHORIZED', status: 401, message: 'Sign-in required' } })
  const tooLarge = await fetch(`${API}/api/v1/updateProfile`, {
    method: 'POST',
    headers: { origin: WEB_ORIGIN, cookie: member.cookie, 'content-type': 'application/json' },
    body: JSON.stringify({ json: { name: 'x'.repeat(70 * 1024) } }),
  })
  t.equal(tooLarge.status, 413)
  t.match(await tooLarge.json(), { json: { defined: false, code: 'PAYLOAD_TOO_LARGE', status: 413 } })
  const head = await fetch(`${API}/api/v1/getProfile`, { method: 'HEAD', headers: { cookie: member.cookie } })
  t.equal(head.status, 404, 'HEAD is no way to call a procedure')
})

t.test("timestamps in an error's data arrive as Dates: PLAN_LIMIT_REACHED's resetsAt", async (t) => {
  const user = await signUp(app, { name: 'At The Limit' })
  const err = await rejection(clientFor(user).usage.increment({ metric: 'aiMessages', amount: 11 }))
  refusedWith(t, err, 'PLAN_LIMIT_REACHED', 402, 'more than the whole limit at once')
  const data = err.data as { resetsAt: unknown }
  t.ok(data.resetsAt instanceof Date, 'data.resetsAt is a Date')
  const nextDay = new Date()
  nextDay.setUTCHours(24, 0, 0, 0)
  t.equal((data.resetsAt as Date).getTime(), nextDay.getTime(), 'the start of the next UTC day')
  t.match(err.data, { metric: 'aiMessages', limit: 10, used: 0 })
})

// Last: every refusal above left the records as they were, and these calls change them.
t.test('each procedure answers through RPCLink, Dates as Dates', async (t) => {
  for (const p of procedures) {
    const s = scenarios[p.name]!
    s.check(t, await callAt(clientFor(s.as), p.path, s.input))
  }
})
