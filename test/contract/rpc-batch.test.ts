// oRPC's batch protocol, driven by the real RPCLink with BatchLinkPlugin over a real socket, in both
// modes, and by hand where a client would not send it. Each call of a batch gets exactly what it
// would have got alone (its session, role, budgets, plan limit, audit), fails alone with its own
// oRPC error, and a batch refused as a whole writes nothing.
import { createORPCClient, ORPCError } from '@orpc/client'
import { RPCLink } from '@orpc/client/fetch'
import { BatchLinkPlugin, DedupeRequestsPlugin, SimpleCsrfProtectionLinkPlugin } from '@orpc/client/plugins'
import type { ContractRouterClient } from '@orpc/contract'
import type { FastifyInstance, InjectOptions } from 'fastify'
import fc from 'fast-check'
import t from 'tap'
import type { contract } from '../helpers/contract.js'
import { buildTestApp, signUp, signUpWithRole, type TestUser, WEB_ORIGIN } from '../helpers/app.js'
import { tablesFingerprint } from '../helpers/expect.js'

const EVIL = 'https://evil.example'
type Client = ContractRouterClient<typeof contract>
const READ_LIKE = /^(?:get|find|list|search)(?:[A-Z].*)?$/

interface Sent {
  method: string
  url: URL
  headers: Headers
  status: number
  contentType: string | null
}

/** A running app, with what RPCLink sent it. */
async function serve(env: Record<string, string> = {}) {
  const app = await buildTestApp({ env: { PAYMENT_GATEWAY: 'sandbox', TRUST_PROXY: '127.0.0.1', ...env } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const api = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  return { app, api }
}

interface ClientOptions {
  origin?: string
  mode?: 'streaming' | 'buffered'
  maxSize?: number
  /** The client's address as the proxy in front says it (TRUST_PROXY is 127.0.0.1 here). */
  ip?: string
  csrf?: boolean
  dedupe?: boolean
}

/** The front end's client with BatchLinkPlugin on: every call of a tick goes in one batch. */
function clientFor(api: string, user: TestUser | undefined, options: ClientOptions = {}) {
  const headers: Record<string, string> = { origin: options.origin ?? WEB_ORIGIN }
  if (user) headers.cookie = user.cookie
  if (options.ip) headers['x-forwarded-for'] = options.ip
  const sent: Sent[] = []
  const plugins = [
    new BatchLinkPlugin({ groups: [{ condition: () => true, context: {} }], mode: options.mode, maxSize: options.maxSize }),
    ...(options.csrf ? [new SimpleCsrfProtectionLinkPlugin()] : []),
    ...(options.dedupe ? [new DedupeRequestsPlugin({ groups: [{ condition: () => true, context: {} }] })] : []),
  ]
  const link = new RPCLink({
    url: `${api}/api/v1`,
    headers,
    method: (_: unknown, path: readonly string[]) => (READ_LIKE.test(path.at(-1)!) ? 'GET' : 'POST'),
    plugins,
    fetch: async (request, init) => {
      const res = await fetch(request, init)
      sent.push({
        method: request.method,
        url: new URL(request.url),
        headers: request.headers,
        status: res.status,
        contentType: res.headers.get('content-type'),
      })
      return res
    },
  })
  return { client: createORPCClient(link) as Client, sent }
}

/** Each call's outcome: its value, or its oRPC error's code and status. */
async function outcomes(calls: Array<Promise<unknown>>) {
  return (await Promise.allSettled(calls)).map((r) => {
    if (r.status === 'fulfilled') return { ok: r.value }
    const err = r.reason
    if (err instanceof ORPCError) return { code: err.code, status: err.status }
    return { failed: String(err) }
  })
}

// Every row of the tables a call could write, hashed: a refused batch must leave them as they were.
const TABLES = ['user', 'session', 'journal_entry', 'usage_counter', 'audit_event', 'payment', 'consent_record']
const fingerprint = (app: FastifyInstance, tables = TABLES) => tablesFingerprint(app.db, tables)

const { app, api } = await serve()
const member = await signUp(app, { name: 'Batch Member' })
const other = await signUp(app, { name: 'Batch Other' })
const admin = await signUpWithRole(app, 'admin')
const othersEntry = (await clientFor(api, other).client.journal.createEntry({ content: 'Not yours', mood: 2 })) as { id: string }

/** One batch as RPCLink would send it, by hand: `calls` are [procedure path, input] of POST calls. */
function rawBatch(
  calls: Array<{ path: string; body?: unknown; method?: string; headers?: Record<string, string> }>,
  headers: Record<string, string> = {},
  options: { url?: string; method?: 'GET' | 'POST' } = {},
) {
  const items = calls.map((c) => ({
    url: `http://api.example/api/v1/${c.path}`,
    ...(c.method && { method: c.method }),
    ...(c.headers && { headers: c.headers }),
    ...(c.body !== undefined && { body: c.body }),
  }))
  const url = options.url ?? `/api/v1/${calls[0]?.path ?? 'getProfile'}/__batch__`
  const method = options.method ?? 'POST'
  return app.inject({
    method,
    url: method === 'GET' ? `${url}?batch=${encodeURIComponent(JSON.stringify(items))}` : url,
    // A header given as undefined is left out.
    headers: Object.fromEntries(
      Object.entries({ origin: WEB_ORIGIN, 'x-orpc-batch': 'buffered', ...headers }).filter(([, v]) => v !== undefined),
    ),
    ...(method === 'POST' && { payload: items }),
  })
}

interface RawAnswer {
  index: number
  status: number
  headers?: Record<string, string>
  body: { json?: { code?: string; status?: number } & Record<string, unknown> }
}
const answersOf = (res: { json(): unknown }) => (res.json() as RawAnswer[]).sort((a, b) => a.index - b.index)

for (const mode of ['streaming', 'buffered'] as const) {
  t.test(`${mode}: one batch of mixed calls, each succeeding or failing alone`, async (t) => {
    const { client, sent } = clientFor(api, member, { mode })
    const before = await app.db.selectFrom('journal_entry').select('id').where('user_id', '=', member.id).execute()
    const results = await outcomes([
      client.journal.createEntry({ content: `Batched ${mode}`, mood: 4 }),
      client.journal.createEntry({ content: '', mood: 9 } as never),
      client.journal.updateEntry({ id: othersEntry.id, mood: 1 }),
      client.usage.increment({ metric: 'aiMessages' }),
      client.journal.deleteEntry({ id: '00000000-0000-0000-0000-000000000000' }),
    ])
    t.match(results[0], { ok: { content: `Batched ${mode}`, mood: 4, userId: member.id } })
    t.ok((results[0] as { ok: { createdAt: unknown } }).ok.createdAt instanceof Date, 'Dates travel in meta, as alone')
    t.same(results[1], { code: 'BAD_REQUEST', status: 400 }, 'bad input: its own 400')
    t.same(results[2], { code: 'NOT_FOUND', status: 404 }, "someone else's record: its own 404")
    t.match(results[3], { ok: { metric: 'aiMessages' } })
    t.same(results[4], { code: 'NOT_FOUND', status: 404 })

    t.equal(sent.length, 1, 'one request carried the five calls')
    t.equal(sent[0]!.method, 'POST')
    t.equal(sent[0]!.url.pathname, '/api/v1/journal/createEntry/__batch__', "the first call's procedure path, then /__batch__")
    t.equal(sent[0]!.headers.get('x-orpc-batch'), mode)
    t.equal(sent[0]!.status, 207)
    t.match(sent[0]!.contentType, mode === 'streaming' ? /^text\/event-stream/ : /^application\/json/)
    const after = await app.db.selectFrom('journal_entry').select('id').where('user_id', '=', member.id).execute()
    t.equal(after.length, before.length + 1, 'only the good entry was written')
  })

  t.test(`${mode}: calls that are all GET go as one GET batch`, async (t) => {
    const { client, sent } = clientFor(api, member, { mode })
    const results = await outcomes([client.getProfile(), client.journal.listEntries({}), client.getPlanAndUsage()])
    t.match(results, [{ ok: { id: member.id } }, { ok: { items: Array } }, { ok: { plan: 'free' } }])
    t.equal(sent.length, 1)
    t.equal(sent[0]!.method, 'GET')
    t.ok(sent[0]!.url.searchParams.has('batch'), 'the calls in ?batch=')
    t.equal(sent[0]!.status, 207)
  })
}

t.test("a wrong-role call fails alone with 403; the member's own call in the batch succeeds", async (t) => {
  const { client } = clientFor(api, member)
  const results = await outcomes([
    client.getProfile(),
    client.admin.listUsers({}),
    client.admin.setUserPlan({ id: other.id, plan: 'premium' }),
  ])
  t.match(results[0], { ok: { id: member.id } })
  t.same(results[1], { code: 'FORBIDDEN', status: 403 })
  t.same(results[2], { code: 'FORBIDDEN', status: 403 })
  const row = await app.db.selectFrom('user').select('plan').where('id', '=', other.id).executeTakeFirstOrThrow()
  t.equal(row.plan, 'free', 'nobody was upgraded')

  const asAdmin = clientFor(api, admin).client
  t.match(await outcomes([asAdmin.admin.listUsers({}), asAdmin.getProfile()]), [
    { ok: { items: Array } },
    { ok: { id: admin.id } },
  ])
})

t.test('a batch without a session: every call is its own 401', async (t) => {
  const { client, sent } = clientFor(api, undefined)
  const results = await outcomes([
    client.getProfile(),
    client.journal.listEntries({}),
    client.journal.createEntry({ content: 'x', mood: 1 }),
    client.updateProfile({ name: 'Nobody' }),
  ])
  t.same(results, [
    { code: 'UNAUTHORIZED', status: 401 },
    { code: 'UNAUTHORIZED', status: 401 },
    { code: 'UNAUTHORIZED', status: 401 },
    { code: 'UNAUTHORIZED', status: 401 },
  ])
  t.same(
    sent.map((s) => s.status),
    [207, 207],
    'a GET batch and a POST batch, each answered 207',
  )
})

t.test('a batch from a foreign origin is refused whole and writes nothing', async (t) => {
  const before = await fingerprint(app)
  const { client, sent } = clientFor(api, member, { origin: EVIL })
  const results = await outcomes([
    client.journal.createEntry({ content: 'Forged', mood: 1 }),
    client.updateProfile({ name: 'Forged' }),
    client.consent.recordConsent({ type: 'terms', version: '2026-01', granted: true }),
  ])
  for (const r of results) t.ok('failed' in r || 'code' in r, 'the call failed')
  t.same(
    sent.map((s) => s.status),
    [403],
  )
  const raw = await rawBatch([{ path: 'journal/createEntry', body: { json: { content: 'Forged', mood: 1 } } }], {
    origin: EVIL,
    cookie: member.cookie,
  })
  t.same([raw.statusCode, raw.json().json.code], [403, 'INVALID_ORIGIN'], 'the batch route checks the origin itself')
  const bare = await rawBatch([{ path: 'journal/createEntry', body: { json: { content: 'Forged', mood: 1 } } }], {
    origin: undefined as never,
    cookie: member.cookie,
  })
  t.same([bare.statusCode, bare.json().json.code], [403, 'MISSING_OR_NULL_ORIGIN'], 'a cookie without Origin')
  t.equal(await fingerprint(app), before, 'nothing changed')
})

t.test('eleven calls are refused whole with 413, as oRPC refuses them; nothing is written', async (t) => {
  const before = await fingerprint(app)
  const { client, sent } = clientFor(api, member, { maxSize: 11 })
  const results = await outcomes(
    Array.from({ length: 11 }, (_, i) => client.journal.createEntry({ content: `Eleven ${i}`, mood: 3 })),
  )
  t.ok(
    results.every((r) => !('ok' in r)),
    'every call failed',
  )
  t.same(
    sent.map((s) => s.status),
    [413],
  )
  const raw = await rawBatch(
    Array.from({ length: 11 }, () => ({ path: 'getProfile' })),
    { cookie: member.cookie },
  )
  t.same([raw.statusCode, raw.json().json.code], [413, 'PAYLOAD_TOO_LARGE'])
  t.equal(await fingerprint(app), before)

  // Ten are one batch; BatchLinkPlugin's own limit splits larger groups.
  const ten = clientFor(api, member)
  const twelve = await outcomes(Array.from({ length: 12 }, () => ten.client.getProfile()))
  t.ok(
    twelve.every((r) => 'ok' in r),
    'twelve calls in two batches',
  )
  t.same(
    ten.sent.map((s) => s.status),
    [207, 207],
  )
})

t.test('what is not a batch of procedure calls is refused, alone or whole', async (t) => {
  const before = await fingerprint(app)
  const cookie = member.cookie
  const res = await rawBatch(
    [
      { path: 'getProfile' },
      { path: 'getProfile/__batch__', body: [{ url: 'http://api.example/api/v1/getProfile' }] },
      { path: '../auth/sign-out' },
      { path: 'profile', method: 'PATCH', body: { name: 'Not a procedure' } },
      { path: 'updateProfile', method: 'TRACE' },
      // The cookie a call names is ignored: a call speaks for the batch's client.
      { path: 'getProfile', headers: { cookie: other.cookie } },
    ],
    { cookie },
  )
  t.equal(res.statusCode, 207)
  const answers = answersOf(res)
  t.same(
    answers.map((a) => [a.status, a.body.json?.code ?? 'ok']),
    [
      [200, 'ok'],
      [400, 'BAD_REQUEST'],
      [404, 'NOT_FOUND'],
      [404, 'NOT_FOUND'],
      [405, 'METHOD_NOT_SUPPORTED'],
      [200, 'ok'],
    ],
  )
  t.equal((answers[5]!.body.json as { id?: string }).id, member.id, "the batch's own session, not the call's cookie")
  t.match(answers[2]!.body, { json: { defined: false, message: 'No procedure matched' } })
  t.equal(
    (await app.db.selectFrom('session').select('id').where('user_id', '=', member.id).execute()).length > 0,
    true,
    'sign-out was not reached',
  )

  const getWithPost = await rawBatch(
    [{ path: 'updateProfile', method: 'POST', body: { json: { name: 'By GET' } } }],
    { cookie },
    { method: 'GET' },
  )
  t.same(
    answersOf(getWithPost).map((a) => [a.status, a.body.json?.code]),
    [[405, 'METHOD_NOT_SUPPORTED']],
    'a GET batch carries only GET calls',
  )

  const cases: Array<[string, InjectOptions, number, string]> = [
    [
      'no x-orpc-batch header',
      { method: 'POST', url: '/api/v1/getProfile/__batch__', headers: { origin: WEB_ORIGIN }, payload: [] },
      400,
      'BAD_REQUEST',
    ],
    [
      'an empty batch (BatchHandlerPlugin would never answer it)',
      {
        method: 'POST',
        url: '/api/v1/getProfile/__batch__',
        headers: { origin: WEB_ORIGIN, 'x-orpc-batch': 'buffered' },
        payload: [],
      },
      400,
      'BAD_REQUEST',
    ],
    [
      'not an array',
      {
        method: 'POST',
        url: '/api/v1/getProfile/__batch__',
        headers: { origin: WEB_ORIGIN, 'x-orpc-batch': '1' },
        payload: { url: 'x' },
      },
      400,
      'BAD_REQUEST',
    ],
    [
      'a relative URL',
      {
        method: 'POST',
        url: '/api/v1/getProfile/__batch__',
        headers: { origin: WEB_ORIGIN, 'x-orpc-batch': '1' },
        payload: [{ url: '/api/v1/getProfile' }],
      },
      400,
      'BAD_REQUEST',
    ],
    [
      'an unknown key',
      {
        method: 'POST',
        url: '/api/v1/getProfile/__batch__',
        headers: { origin: WEB_ORIGIN, 'x-orpc-batch': '1' },
        payload: [{ url: 'http://a/api/v1/getProfile', extra: 1 }],
      },
      400,
      'BAD_REQUEST',
    ],
    [
      'a header with a line break',
      {
        method: 'POST',
        url: '/api/v1/getProfile/__batch__',
        headers: { origin: WEB_ORIGIN, 'x-orpc-batch': '1' },
        payload: [{ url: 'http://a/api/v1/getProfile', headers: { 'x-a': 'b\r\nset-cookie: x=y' } }],
      },
      400,
      'BAD_REQUEST',
    ],
    [
      'GET without ?batch',
      { method: 'GET', url: '/api/v1/getProfile/__batch__', headers: { origin: WEB_ORIGIN, 'x-orpc-batch': '1' } },
      400,
      'BAD_REQUEST',
    ],
    [
      'a body over the limit',
      {
        method: 'POST',
        url: '/api/v1/journal/createEntry/__batch__',
        headers: { origin: WEB_ORIGIN, 'x-orpc-batch': '1', cookie },
        payload: [{ url: 'http://a/api/v1/journal/createEntry', body: { json: { content: 'x'.repeat(70 * 1024), mood: 1 } } }],
      },
      413,
      'PAYLOAD_TOO_LARGE',
    ],
    [
      'a HEAD',
      { method: 'HEAD', url: '/api/v1/getProfile/__batch__', headers: { origin: WEB_ORIGIN, 'x-orpc-batch': '1' } },
      404,
      '',
    ],
  ]
  for (const [name, request, status, code] of cases) {
    const res = await app.inject(request)
    t.equal(res.statusCode, status, name)
    if (code) t.match(res.json(), { json: { defined: false, code, status } }, `${name}: in the RPC envelope`)
  }
  t.equal(await fingerprint(app), before, 'nothing written')
})

t.test("a call cannot speak for the browser's site: a cross-site batch's export is refused", async (t) => {
  // No Origin (a GET), the browser's word that the request is cross-site, and a call that claims otherwise.
  const call = { url: 'http://a/api/v1/me/exportMyData', method: 'GET', headers: { 'sec-fetch-site': 'same-origin' } }
  const res = await app.inject({
    method: 'GET',
    url: `/api/v1/me/exportMyData/__batch__?batch=${encodeURIComponent(JSON.stringify([call]))}`,
    headers: { cookie: member.cookie, 'x-orpc-batch': 'buffered', 'sec-fetch-site': 'cross-site' },
  })
  const [answer] = answersOf(res)
  t.same([answer!.status, answer!.body.json?.code], [403, 'CROSS_SITE_REQUEST'])
})

t.test("each call has its own request id, derived from the batch's, on its answer", async (t) => {
  const res = await rawBatch([{ path: 'getProfile' }, { path: 'getPlanAndUsage' }], {
    cookie: member.cookie,
    'x-request-id': 'batch-abc',
  })
  t.equal(res.headers['x-request-id'], 'batch-abc')
  t.same(
    answersOf(res).map((a) => a.headers?.['x-request-id']),
    ['batch-abc.0', 'batch-abc.1'],
  )
})

t.test("a call that ends the session clears the cookie on the batch's answer", async (t) => {
  const leaving = await signUp(app, { name: 'Leaving' })
  const res = await rawBatch([{ path: 'me/deleteMyAccount', body: { json: { password: leaving.password } } }], {
    cookie: leaving.cookie,
  })
  t.equal(res.statusCode, 207)
  t.match(String(res.headers['set-cookie']), /session_token=;/, 'the Set-Cookie of the deletion is on the batch answer')
})

t.test("streaming: oRPC's event-stream bytes; the batch's own session check clears a forged cookie", async (t) => {
  const forged = { id: '', email: '', password: '', cookie: 'better-auth.session_token=forged.value' }
  const res = await rawBatch([{ path: 'getProfile' }], { cookie: forged.cookie, 'x-orpc-batch': 'streaming' })
  t.equal(res.statusCode, 207)
  t.match(res.headers['content-type'], /^text\/event-stream/)
  t.match(String(res.headers['set-cookie']), /session_token=;/, 'a forged cookie is cleared, as on any request')
  t.match(res.body, /^: \n\nevent: message\ndata: \{"index":0,"status":401/, "oRPC's event stream bytes")
})

// Budgets, plan limits and audit, from one client address behind the trusted proxy.
t.test('budgets: each call counts as a call, from the address of the batch', async (t) => {
  const limited = await serve({ RATE_LIMIT_GLOBAL_PER_MINUTE: '5' })
  const user = await signUp(limited.app)
  const ip = '203.0.113.7'
  const { client, sent } = clientFor(limited.api, user, { ip })
  const first = await outcomes([client.getProfile(), client.getPlanAndUsage(), client.journal.listEntries({})])
  t.ok(
    first.every((r) => 'ok' in r),
    'three calls, three of five',
  )
  const second = await outcomes([client.getProfile(), client.getPlanAndUsage(), client.journal.listEntries({})])
  t.same(
    second.map((r) => ('ok' in r ? 'ok' : r.code)),
    ['ok', 'ok', 'RATE_LIMITED'],
    'the sixth call of the minute is refused alone',
  )
  t.same(
    sent.map((s) => s.status),
    [207, 207],
  )

  // The refused call carries its Retry-After; a call cannot move itself to another address.
  const res = await limited.app.inject({
    method: 'POST',
    url: '/api/v1/getProfile/__batch__',
    headers: { origin: WEB_ORIGIN, cookie: user.cookie, 'x-orpc-batch': 'buffered', 'x-forwarded-for': ip },
    payload: [{ url: 'http://a/api/v1/getProfile', headers: { 'x-forwarded-for': '198.51.100.1', 'x-real-ip': '198.51.100.1' } }],
  })
  const [answer] = answersOf(res)
  t.same([answer!.status, answer!.body.json?.code], [429, 'RATE_LIMITED'])
  t.ok(Number(answer!.headers?.['retry-after']) > 0, 'Retry-After on the call')
  const elsewhere = await clientFor(limited.api, user, { ip: '198.51.100.1' }).client.getProfile()
  t.match(elsewhere, { id: user.id }, 'the address the call named was never charged')

  // A batch refused whole costs one.
  const fresh = '203.0.113.8'
  for (let i = 0; i < 5; i++) {
    const refused = await limited.app.inject({
      method: 'POST',
      url: '/api/v1/getProfile/__batch__',
      headers: { origin: WEB_ORIGIN, 'x-orpc-batch': '1', 'x-forwarded-for': fresh },
      payload: [],
    })
    t.equal(refused.statusCode, 400)
  }
  const sixth = await limited.app.inject({
    method: 'POST',
    url: '/api/v1/getProfile/__batch__',
    headers: { origin: WEB_ORIGIN, 'x-orpc-batch': '1', 'x-forwarded-for': fresh },
    payload: [],
  })
  t.same([sixth.statusCode, sixth.json().json.code], [429, 'RATE_LIMITED'], 'empty batches are counted')
})

t.test('budgets: a call refused before it runs (no such procedure, a nested batch) costs one too', async (t) => {
  // Otherwise batches of calls to nowhere, 64 KiB each, were never counted: a flood the global
  // per-IP budget exists to stop, sent past it.
  const limited = await serve({ RATE_LIMIT_GLOBAL_PER_MINUTE: '5' })
  const ip = '203.0.113.9'
  const nowhere = (n: number) =>
    limited.app.inject({
      method: 'POST',
      url: '/api/v1/getProfile/__batch__',
      headers: { origin: WEB_ORIGIN, 'x-orpc-batch': 'buffered', 'x-forwarded-for': ip },
      payload: Array.from({ length: n }, (_, i) => ({
        url: i % 2 ? 'http://a/api/v1/getProfile/__batch__' : 'http://a/api/v1/nothing',
        body: 'x'.repeat(100),
      })),
    })
  t.same(
    answersOf(await nowhere(4)).map((a) => a.status),
    [404, 400, 404, 400],
  )
  t.same(
    answersOf(await nowhere(2)).map((a) => [a.status, a.body.json?.code]),
    [
      [404, 'NOT_FOUND'],
      [429, 'RATE_LIMITED'],
    ],
    'the sixth call of the minute is refused for the budget',
  )
  const [, refused] = answersOf(await nowhere(2))
  t.ok(Number(refused!.headers?.['retry-after']) > 0, 'with its Retry-After, as a call that ran')
  t.equal(
    (refused!.body.json?.data as { retryAfter?: number } | undefined)?.retryAfter,
    Number(refused!.headers?.['retry-after']),
    'and data.retryAfter',
  )
  const alone = await limited.app.inject({ method: 'GET', url: '/api/v1/profile', headers: { 'x-forwarded-for': ip } })
  t.equal(alone.statusCode, 429, 'the address spent its budget')
})

t.test('a call whose body is nested too deeply to send on is its own 400, not a 5xx', async (t) => {
  // The batch's JSON parser takes a depth that JSON.stringify cannot write back: a direct call with
  // the same body is a 400, never "shutting down".
  const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/updateProfile/__batch__',
    headers: { origin: WEB_ORIGIN, cookie: member.cookie, 'x-orpc-batch': 'buffered', 'content-type': 'application/json' },
    payload: `[{"url":"http://a/api/v1/updateProfile","body":${deep}},{"url":"http://a/api/v1/getProfile"}]`,
  })
  t.equal(res.statusCode, 207)
  t.same(
    answersOf(res).map((a) => [a.status, a.body.json?.code ?? 'ok']),
    [
      [400, 'BAD_REQUEST'],
      [200, 'ok'],
    ],
  )
})

t.test('plan limits: each call is counted against the plan, the ones past it refused alone', async (t) => {
  const user = await signUp(app)
  const { client } = clientFor(api, user)
  // A free plan has 10 AI messages a day: ten in one batch, then one more.
  const ten = await outcomes(Array.from({ length: 10 }, () => client.usage.increment({ metric: 'aiMessages' })))
  t.ok(
    ten.every((r) => 'ok' in r),
    'ten counted',
  )
  const more = await outcomes([client.usage.increment({ metric: 'aiMessages' }), client.getPlanAndUsage()])
  t.match(more, [{ code: 'PLAN_LIMIT_REACHED', status: 402 }, { ok: { plan: 'free' } }])
})

t.test("audit: an administrator's batched call is recorded with the batch's client address", async (t) => {
  const audited = await serve()
  const boss = await signUpWithRole(audited.app, 'admin')
  const target = await signUp(audited.app)
  const ip = '203.0.113.9'
  const { client } = clientFor(audited.api, boss, { ip })
  const results = await outcomes([
    client.admin.setUserPlan({ id: target.id, plan: 'premium' }),
    client.admin.getUser({ id: target.id }),
  ])
  t.match(results, [{ ok: { plan: 'premium' } }, { ok: { id: target.id } }])
  const events = await audited.app.db
    .selectFrom('audit_event')
    .select(['action', 'actor_id', 'ip'])
    .where('target_id', '=', target.id)
    .where('actor_id', '=', boss.id)
    .execute()
  t.ok(events.length >= 1, 'recorded')
  for (const e of events) t.equal(e.ip, ip, `${e.action}: from the batch's client`)
})

t.test('the link plugins of a real front end together: batch, dedupe and the CSRF header', async (t) => {
  const { client, sent } = clientFor(api, member, { csrf: true, dedupe: true })
  const results = await outcomes([client.getProfile(), client.getProfile(), client.journal.listEntries({})])
  t.match(results, [{ ok: { id: member.id } }, { ok: { id: member.id } }, { ok: { items: Array } }])
  t.equal(sent.length, 1)
  t.equal(sent[0]!.headers.get('x-csrf-token'), 'orpc', 'the token rides on the batch')
})

t.test('RPC_REQUIRE_CSRF_HEADER: off by default; on, every call needs x-csrf-token: orpc', async (t) => {
  const plain = createORPCClient(
    new RPCLink({ url: `${api}/api/v1`, headers: { origin: WEB_ORIGIN, cookie: member.cookie } }),
  ) as Client
  t.match(await plain.getProfile(), { id: member.id }, 'off: a call without the header works')

  const strict = await serve({ RPC_REQUIRE_CSRF_HEADER: 'true' })
  const user = await signUp(strict.app)
  const bare = createORPCClient(
    new RPCLink({ url: `${strict.api}/api/v1`, headers: { origin: WEB_ORIGIN, cookie: user.cookie } }),
  ) as Client
  const refused = await outcomes([bare.getProfile(), bare.journal.createEntry({ content: 'No token', mood: 1 })])
  t.same(refused, [
    { code: 'CSRF_TOKEN_MISMATCH', status: 403 },
    { code: 'CSRF_TOKEN_MISMATCH', status: 403 },
  ])
  const withToken = createORPCClient(
    new RPCLink({
      url: `${strict.api}/api/v1`,
      headers: { origin: WEB_ORIGIN, cookie: user.cookie },
      plugins: [new SimpleCsrfProtectionLinkPlugin()],
    }),
  ) as Client
  t.match(await withToken.getProfile(), { id: user.id })
  const batched = clientFor(strict.api, user, { csrf: true })
  t.match(await outcomes([batched.client.getProfile(), batched.client.getPlanAndUsage()]), [{ ok: { id: user.id } }, { ok: {} }])
  const unbatched = clientFor(strict.api, user)
  t.match(await outcomes([unbatched.client.getProfile(), unbatched.client.getPlanAndUsage()]), [
    { code: 'CSRF_TOKEN_MISMATCH' },
    { code: 'CSRF_TOKEN_MISMATCH' },
  ])

  // The token must be a header of the batch itself: one in a call's entry of the body proves nothing.
  const res = await strict.app.inject({
    method: 'POST',
    url: '/api/v1/getProfile/__batch__',
    headers: { origin: WEB_ORIGIN, cookie: user.cookie, 'x-orpc-batch': 'buffered' },
    payload: [{ url: 'http://a/api/v1/getProfile', headers: { 'x-csrf-token': 'orpc' } }],
  })
  t.same(
    answersOf(res).map((a) => a.body.json?.code),
    ['CSRF_TOKEN_MISMATCH'],
  )
  const rest = await strict.app.inject({
    method: 'GET',
    url: '/api/v1/profile',
    headers: { origin: WEB_ORIGIN, cookie: user.cookie },
  })
  t.equal(rest.statusCode, 200, "the REST twins are not oRPC's: the rule is the RPC surface's")
})

t.test('hostile batches never get a 5xx, whole or per call, and are refused in the RPC envelope', async (t) => {
  // A call that happens to be valid may write a journal entry and count it; nothing else may change.
  const untouched = TABLES.filter((table) => table !== 'journal_entry' && table !== 'usage_counter')
  const before = await fingerprint(app, untouched)
  const procedurePaths = [
    'getProfile',
    'journal/createEntry',
    'admin/banUser',
    'getProfile/__batch__',
    'nothing',
    '../auth/sign-out',
  ]
  const call = fc.record(
    {
      url: fc.oneof(
        fc.constantFrom(...procedurePaths).map((p) => `http://a/api/v1/${p}`),
        fc.webUrl(),
        fc.string(),
      ),
      method: fc.constantFrom('GET', 'POST', 'DELETE', 'TRACE', 'get', ''),
      headers: fc.dictionary(
        fc.constantFrom('x-forwarded-for', 'cookie', 'x-csrf-token', 'content-type', 'accept', 'x-orpc-batch'),
        fc.string(),
      ),
      body: fc.oneof(fc.constant(undefined), fc.jsonValue(), fc.record({ json: fc.jsonValue() })),
    },
    { requiredKeys: ['url'] },
  )
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(fc.array(call, { maxLength: 12 }), fc.jsonValue()),
      fc.constantFrom('streaming', 'buffered'),
      async (payload, mode) => {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/getProfile/__batch__',
          headers: { origin: WEB_ORIGIN, cookie: other.cookie, 'x-orpc-batch': mode, 'content-type': 'application/json' },
          payload: JSON.stringify(payload),
        })
        if (res.statusCode !== 207) {
          if (res.statusCode >= 500) throw new Error(`${res.statusCode} ${res.body}`)
          if ((res.json() as { json?: { defined?: boolean } }).json?.defined !== false)
            throw new Error(`not the RPC envelope: ${res.body}`)
          return
        }
        const answers =
          mode === 'buffered'
            ? (res.json() as RawAnswer[])
            : res.body
                .split('\n')
                .filter((l) => l.startsWith('data: '))
                .map((l) => JSON.parse(l.slice(6)) as RawAnswer)
        for (const a of answers) if (a.status >= 500) throw new Error(`call ${a.index}: ${a.status} ${JSON.stringify(a.body)}`)
      },
    ),
    { numRuns: Number(process.env.HOSTILE_RUNS ?? 40) },
  )
  t.equal(await fingerprint(app, untouched), before, 'nothing else written')
})

t.test('the batch routes are not in the OpenAPI document', async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as { paths: Record<string, unknown> }
  t.ok(Object.keys(doc.paths).length > 40)
  t.same(
    Object.keys(doc.paths).filter((p) => p.includes('__batch__')),
    [],
  )
})
