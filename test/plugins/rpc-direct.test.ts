// A plain RPC call (no meta) is served without oRPC's handler (src/plugins/rpc-direct.ts). For
// EVERY procedure of the contract, the same call is sent to two apps on one database and one fixed
// clock: this one, and one that sends every call through oRPC's StandardRPCHandler. The answers
// must be the same: status, headers, body byte for byte, for a call that works and for each way
// one fails (input its schema refuses, a GET on a procedure that changes state, no CSRF header,
// no such record). Where a call changes something, each app gets its own twin of the record or
// user, prepared alike, and the twin's ids and addresses are mapped before the bytes are compared.
import { StandardRPCJsonSerializer, StandardRPCSerializer } from '@orpc/client/standard'
import { traverseContractProcedures } from '@orpc/server'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import t from 'tap'
import { rpcJson } from '../../src/plugins/rpc-direct.js'
import { buildTestApp, signUp, signUpWithRole, type TestUser, WEB_ORIGIN } from '../helpers/app.js'
import { contract } from '../helpers/contract.js'

const NOW = new Date('2026-03-04T05:06:07.089Z')
const clock = { now: () => new Date(NOW) }
const env = { PAYMENT_GATEWAY: 'sandbox', RPC_REQUIRE_CSRF_HEADER: 'true', RATE_LIMIT_PASSWORD_CHECKS_PER_MINUTE: '1000000' }
const direct = await buildTestApp({ env, deps: { clock } })
const throughOrpc = await buildTestApp({ env, deps: { clock, rpcFastPath: false } })

const serializer = new StandardRPCSerializer(new StandardRPCJsonSerializer())

interface Procedure {
  name: string
  method: string
}
const procedures: Procedure[] = []
traverseContractProcedures({ router: contract, path: [] }, ({ contract: procedure, path }) => {
  procedures.push({ name: path.join('.'), method: (procedure['~orpc'].route as { method: string }).method })
})

/** A call as RPCLink sends it: GET with ?data= for the procedures declared GET, else a POST. */
function send(
  app: FastifyInstance,
  procedure: Procedure,
  as: TestUser,
  envelope: unknown,
  options: { method?: 'GET' | 'POST'; csrf?: boolean } = {},
) {
  const headers: Record<string, string> = { origin: WEB_ORIGIN, cookie: as.cookie, 'x-request-id': 'same-id' }
  if (options.csrf !== false) headers['x-csrf-token'] = 'orpc'
  const url = `/api/v1/${procedure.name.replaceAll('.', '/')}`
  const method = options.method ?? (procedure.method === 'GET' ? 'GET' : 'POST')
  if (method === 'GET') return app.inject({ method, url, query: { data: JSON.stringify(envelope) }, headers })
  return app.inject({
    method,
    url,
    payload: JSON.stringify(envelope),
    headers: { ...headers, 'content-type': 'application/json' },
  })
}

const envelopeOf = (input: unknown) => serializer.serialize(input) as { json: unknown; meta?: unknown }

/** What must match: the status, every header but Date (Content-Length with the bytes), the body. */
function answerOf(res: LightMyRequestResponse, twins: Array<[string, string]>) {
  const { date: _date, 'content-length': length, ...headers } = res.headers
  let body = res.body
  for (const [theirs, ours] of twins) body = body.replaceAll(theirs, ours)
  return { status: res.statusCode, headers, body, lengthMatchesBytes: Number(length) === Buffer.byteLength(res.body) }
}

// The callers. Twins (index 0 for this app, 1 for the other) for the calls that change something.
const member = await signUp(direct, { name: 'Same Member' })
const admin = await signUpWithRole(direct, 'admin')
const premium = await signUp(direct, { name: 'Premium' })
await direct.db.updateTable('user').set({ plan: 'premium_plus' }).where('id', '=', premium.id).execute()
const twin = async (name: string) => [await signUp(direct, { name }), await signUp(direct, { name })] as const
const writers = await twin('Writer')
const targets = await twin('Target')
const leaving = await twin('Leaving')
await sql`update "user" set plan = 'premium_plus' where id in (${writers[0].id}, ${writers[1].id})`.execute(direct.db)
// Signing up stamps the user with the database's time, not the app's clock: twins alike.
await sql`update "user" set created_at = ${NOW}, updated_at = ${NOW}`.execute(direct.db)

/** A procedure called over the direct app's own RPC, to set records up. */
async function setUp<T>(name: string, as: TestUser, input: unknown): Promise<T> {
  const res = await send(direct, { name, method: 'POST' }, as, envelopeOf(input))
  if (res.statusCode !== 200) throw new Error(`${name}: ${res.statusCode} ${res.body}`)
  return serializer.deserialize(res.json()) as T
}
const entry = await setUp<{ id: string }>('journal.createEntry', member, { content: 'Read me', mood: 3 })
const entriesToDelete = [
  await setUp<{ id: string }>('journal.createEntry', writers[0], { content: 'Delete me', mood: 2 }),
  await setUp<{ id: string }>('journal.createEntry', writers[1], { content: 'Delete me', mood: 2 }),
]
const resultInput = { partner: { name: 'Bima', birthDate: '1992-11-09' }, systems: ['bazi'], score: 71, summary: { lite: true } }
const result = await setUp<{ id: string }>('compatibility.createResult', premium, resultInput)
const results = [
  await setUp<{ id: string }>('compatibility.createResult', writers[0], resultInput),
  await setUp<{ id: string }>('compatibility.createResult', writers[1], resultInput),
]
const payment = await setUp<{ paymentId: string }>('payment.createCheckout', member, {
  product: 'premium_month',
  returnUrl: '/done',
})
await setUp('consent.recordConsent', member, { type: 'terms', version: '2026-01', granted: true })

/** The call that works, as side 0 (this app) and side 1 (through oRPC) make it. */
interface Call {
  as: TestUser
  input: unknown
  /** Values of side 1's twin, each mapped to side 0's before the bodies are compared. */
  twins?: Array<[string, string]>
}
type Scenario = ((side: 0 | 1) => Call) & {
  /** Undoes what side 0's call recorded beyond its answer, which side 1's answer would show. */
  between?: () => Promise<unknown>
}
/** The export is recorded in the audit trail it exports: the second would show the first. */
const forgetExport = () =>
  direct.db.deleteFrom('audit_event').where('action', '=', 'personal_data.exported').where('target_id', '=', member.id).execute()
const same =
  (as: TestUser, input: unknown): Scenario =>
  () => ({ as, input })
const onTwin =
  <T extends { id: string; email?: string }>(pair: readonly [T, T], as: TestUser | null, input: (of: T) => object): Scenario =>
  (side) => ({
    as: as ?? (pair[side] as unknown as TestUser),
    input: input(pair[side]),
    twins: [[pair[1].id, pair[0].id], ...(pair[0].email ? ([[pair[1].email!, pair[0].email]] as Array<[string, string]>) : [])],
  })
const byTarget = (input: object) => onTwin(targets, admin, (target) => ({ id: target.id, ...input }))

// Reads first (nothing changes between the two sides), then the calls that change something.
const works: Record<string, Scenario> = {
  getProfile: same(member, undefined),
  getPlanAndUsage: same(member, undefined),
  'journal.getEntry': same(member, { id: entry.id }),
  'journal.listEntries': same(member, { limit: 5 }),
  'journal.getTodayPrompt': same(member, { locale: 'id', date: '2026-03-04' }),
  'compatibility.getResult': same(premium, { id: result.id }),
  'compatibility.listResults': same(premium, {}),
  'payment.verifyPayment': same(member, { paymentId: payment.paymentId }),
  'payment.listPayments': same(member, {}),
  'admin.listUsers': same(admin, { email: member.email }),
  'admin.getUser': same(admin, { id: member.id }),
  'admin.getUsageAnalytics': same(admin, {}),
  'admin.listAuditEvents': same(admin, { targetId: member.id, limit: 100 }),
  'consent.getConsents': same(member, undefined),
  'me.exportMyData': Object.assign(same(member, undefined), { between: forgetExport }),
  'me.listSecurityEvents': same(member, { limit: 2 }),
  updateProfile: same(member, { name: 'Renamed', birthDate: '1990-04-01', timezone: 'Asia/Jakarta' }),
  'journal.updateEntry': same(member, { id: entry.id, mood: 5 }),
  'usage.increment': onTwin(writers, null, () => ({ metric: 'aiMessages' })),
  'journal.createEntry': onTwin(writers, null, () => ({ content: 'Created', mood: 4, tags: ['rpc'] })),
  'journal.deleteEntry': (side) => ({ as: writers[side], input: { id: entriesToDelete[side]!.id } }),
  'compatibility.createResult': onTwin(writers, null, () => resultInput),
  'compatibility.unlockDeepInsights': (side) => ({
    as: writers[side],
    input: { id: results[side]!.id },
    twins: [
      [results[1]!.id, results[0]!.id],
      [writers[1].id, writers[0].id],
    ],
  }),
  'compatibility.saveDeepInsights': (side) => ({
    as: writers[side],
    input: { id: results[side]!.id, content: { insight: 'deep' } },
    twins: [
      [results[1]!.id, results[0]!.id],
      [writers[1].id, writers[0].id],
    ],
  }),
  'payment.createCheckout': onTwin(writers, null, () => ({ product: 'premium_plus_month', returnUrl: '/done' })),
  'consent.recordConsent': onTwin(writers, null, () => ({ type: 'terms', version: '2026-02', granted: true })),
  'admin.makeUserAdmin': byTarget({}),
  'admin.setUserRole': byTarget({ role: 'member' }),
  'admin.setUserPremiumPlus': byTarget({ expiresAt: '2999-01-01T00:00:00.000Z' }),
  'admin.setUserPlan': byTarget({ plan: 'free' }),
  'admin.banUser': byTarget({ reason: 'Spam', expiresAt: '2999-01-01T00:00:00.000Z' }),
  'admin.unbanUser': byTarget({}),
  'admin.revokeUserSessions': byTarget({}),
  'admin.removeUserSecondFactor': byTarget({}),
  'me.deleteMyAccount': (side) => ({ as: leaving[side], input: { password: leaving[side].password } }),
}
/** An input naming a record that does not exist: the handler's 404. */
const missing: Record<string, unknown> = {
  'journal.getEntry': { id: 'no-such-entry' },
  'journal.updateEntry': { id: 'no-such-entry', mood: 1 },
  'journal.deleteEntry': { id: 'no-such-entry' },
  'compatibility.getResult': { id: 'no-such-result' },
  'compatibility.unlockDeepInsights': { id: 'no-such-result' },
  'compatibility.saveDeepInsights': { id: 'no-such-result', content: {} },
  'payment.verifyPayment': { paymentId: 'no-such-payment' },
  'admin.getUser': { id: 'no-such-user' },
  'admin.banUser': { id: 'no-such-user', reason: 'x' },
}

t.test('every procedure of the contract has its call here', async (t) => {
  t.equal(direct.rpcFastPath, true, 'the app serves plain calls itself')
  t.equal(throughOrpc.rpcFastPath, false, 'the other sends every call through oRPC')
  t.same(procedures.map((p) => p.name).sort(), Object.keys(works).sort())
})

t.test("each procedure's call that works: the same answer from both, byte for byte", async (t) => {
  for (const name of Object.keys(works)) {
    const procedure = procedures.find((p) => p.name === name)!
    const calls = [works[name]!(0), works[name]!(1)] as const
    const envelope = envelopeOf(calls[0].input)
    // Plain: this app's side is served without oRPC's handler.
    t.equal(envelope.meta, undefined, `${name}: the input needs no meta`)
    const ours = await send(direct, procedure, calls[0].as, envelope)
    await works[name]!.between?.()
    const theirs = await send(throughOrpc, procedure, calls[1].as, envelopeOf(calls[1].input))
    t.equal(ours.statusCode, 200, `${name}: works (${ours.body.slice(0, 200)})`)
    // Ids the two calls created, each its own, and the database's stamp of a new row.
    const created = (res: LightMyRequestResponse) => {
      const json = (res.json() as { json?: Record<string, unknown> }).json
      return [String(json?.id ?? json?.paymentId), String(json?.createdAt)]
    }
    const twins = [...(calls[1].twins ?? [])]
    if (/\.(create|record)/.test(name)) {
      const [theirId, theirStamp] = created(theirs)
      const [ourId, ourStamp] = created(ours)
      twins.push([theirId!, ourId!], [theirStamp!, ourStamp!])
    }
    t.same(answerOf(theirs, twins), answerOf(ours, []), `${name}: the same answer`)
  }
})

t.test('each way a call fails: the same answer from both, byte for byte', async (t) => {
  for (const procedure of procedures) {
    const { name } = procedure
    const caller = name.startsWith('admin.') ? admin : name.startsWith('compatibility.') ? premium : member
    const cases: Array<[string, unknown, { method?: 'GET' | 'POST'; csrf?: boolean }, number]> = [
      ['input its schema refuses', { json: 42 }, {}, 400],
      ['input with a key no schema has', { json: { notAField: 1 }, meta: [] }, {}, 400],
      ['no CSRF header', envelopeOf(works[name]!(0).input), { csrf: false }, 403],
    ]
    if (procedure.method !== 'GET') cases.push(['a GET', envelopeOf(works[name]!(0).input), { method: 'GET' }, 405])
    if (missing[name]) cases.push(['no such record', envelopeOf(missing[name]), {}, 404])
    for (const [what, envelope, options, status] of cases) {
      const ours = await send(direct, procedure, caller, envelope, options)
      const theirs = await send(throughOrpc, procedure, caller, envelope, options)
      t.equal(ours.statusCode, status, `${name}, ${what}: ${status} (${ours.body.slice(0, 160)})`)
      t.same(answerOf(theirs, []), answerOf(ours, []), `${name}, ${what}: the same answer`)
    }
  }
})

t.test("getProfile's kept answer: the same bytes again, a new one once the profile changes", async (t) => {
  const getProfile = procedures.find((p) => p.name === 'getProfile')!
  const updateProfile = procedures.find((p) => p.name === 'updateProfile')!
  const first = await send(direct, getProfile, member, {})
  const again = await send(direct, getProfile, member, {})
  t.same(answerOf(again, []), answerOf(first, []), 'the same answer from memory')
  const renamed = await send(direct, updateProfile, member, envelopeOf({ name: 'Kept No More' }))
  t.equal(renamed.statusCode, 200)
  for (const app of [direct, throughOrpc]) {
    // The change reaches each app's session cache when it commits (a notification).
    let res = await send(app, getProfile, member, {})
    for (let i = 0; i < 50 && !res.body.includes('Kept No More'); i++) {
      await new Promise((r) => setTimeout(r, 10))
      res = await send(app, getProfile, member, {})
    }
    t.match(res.json(), { json: { name: 'Kept No More' } }, 'the new name')
  }
  t.same(
    answerOf(await send(direct, getProfile, member, {}), []),
    answerOf(await send(throughOrpc, getProfile, member, {}), []),
    'the same answer from both',
  )
})

t.test("rpcJson writes what oRPC's serializer writes, for every type it knows", async (t) => {
  const values: unknown[] = [
    undefined,
    null,
    0,
    -0,
    1.5,
    Number.POSITIVE_INFINITY,
    'text',
    true,
    new Date(NOW),
    new Date(Number.NaN),
    [1, 'a', null, [new Date(NOW)]],
    { a: 1, b: undefined, c: { d: new Date(NOW), e: [new Date(0), { f: null }] } },
    { toJSON: () => 'skipped', kept: 1 },
    Object.assign(Object.create(null), { nullPrototype: new Date(NOW) }),
    { big: 10n },
    { nan: Number.NaN },
    { url: new URL('https://example.com/a') },
    { regexp: /a+/gi },
    { set: new Set([1, new Date(NOW)]) },
    { map: new Map([['k', new Date(NOW)]]) },
    [1, undefined, 2],
    {
      instance: new (class Point {
        x = 1
      })(),
    },
    JSON.parse('{"__proto__": {"polluted": 1}, "a": [{"constructor": {"prototype": 1}}]}'),
  ]
  for (const [i, value] of values.entries())
    t.equal(rpcJson(value), JSON.stringify(serializer.serialize(value)), `the same JSON for value ${i}`)
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype polluted')
})
