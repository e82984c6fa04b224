// Property-based: every route of the generated OpenAPI document, fed random and hostile bodies,
// query strings, path parameters, headers and cookies, never answers 5xx, always answers errors in
// the one shape, and a refused request leaves every table's row count as it was.
import { traverseContractProcedures } from '@orpc/server'
import fc from 'fast-check'
import { sql } from 'kysely'
import t from 'tap'
import { contract } from '../helpers/contract.js'
import { buildTestApp, signUp, signUpWithRole, WEB_ORIGIN } from '../helpers/app.js'
import { routeTable, type TableRoute } from '../helpers/routes.js'

const app = await buildTestApp()
const member = await signUp(app)
const admin = await signUpWithRole(app, 'admin')

const RUNS = Number(process.env.HOSTILE_RUNS ?? 15)
// These end the caller's own session when they succeed, which would blind the rest of the run.
const SKIP = new Set(['POST /api/auth/sign-out', 'POST /api/auth/revoke-other-sessions', 'POST /api/auth/revoke-session'])
const WEBHOOK = 'POST /api/v1/payments/webhook/:provider'
// Routes that take no input: the API document, its page and the metrics.
const NO_INPUT = new Set([
  'GET /api/v1/openapi.json',
  'GET /api/v1/docs',
  'GET /api/v1/docs/',
  'GET /api/v1/docs/json',
  'GET /api/v1/docs/yaml',
  'GET /api/v1/docs/static/*',
  'GET /api/v1/docs/static/index.html',
  'GET /api/v1/docs/static/swagger-initializer.js',
  'GET /metrics',
])
const key = (r: { method: string; pattern: string }) => `${r.method} ${r.pattern}`

/**
 * The routes of the route table this file does not feed hostile input to, each with the reason. All
 * the others must be exercised: a new route is either in the OpenAPI document or named here.
 */
const NOT_EXERCISED: Array<[reason: string, applies: (r: TableRoute) => boolean]> = [
  ["ends the caller's own session", (r) => SKIP.has(key(r))],
  ['answers only a signed body (the payment tests forge and replay its signatures)', (r) => key(r) === WEBHOOK],
  ['takes no input', (r) => NO_INPUT.has(key(r))],
  ["is Fastify's HEAD twin of a GET route: the GET's handler, exercised", (r) => r.method === 'HEAD'],
  [
    "is a procedure's batch route: each call it carries is its procedure's route (rpc-batch.test.ts drives its unhappy paths)",
    (r) => r.batch,
  ],
  [
    "is an oRPC procedure's route: the handler and input schema of its REST twin, exercised (rpc-link.test.ts drives each procedure's unhappy paths, rpc-bodies.test.ts its malformed bodies)",
    (r) => r.procedure !== undefined,
  ],
]
const exception = (r: TableRoute) => NOT_EXERCISED.find(([, applies]) => applies(r))?.[0]

interface Operation {
  method: string
  path: string
  bodyKeys: string[]
  queryKeys: string[]
}

const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as {
  paths: Record<
    string,
    Record<
      string,
      {
        requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> }
        parameters?: Array<{ in: string; name: string }>
      }
    >
  >
}
const operations: Operation[] = []
for (const [path, methods] of Object.entries(doc.paths)) {
  for (const [method, op] of Object.entries(methods)) {
    const key = `${method.toUpperCase()} ${path}`
    if (SKIP.has(key) || path.includes('/webhook/')) continue
    operations.push({
      method: method.toUpperCase(),
      path,
      bodyKeys: Object.keys(op.requestBody?.content?.['application/json']?.schema?.properties ?? {}),
      queryKeys: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
    })
  }
}

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom(
    "' OR 1=1 --",
    '"; drop table "user"; --',
    '<script>alert(1)</script>',
    '../../etc/passwd',
    '%00',
    '%',
    '%E0%A4%A',
    '\u0000',
    '\uD800',
    '𝕏'.repeat(20),
    '__proto__',
    'constructor',
    '-1',
    '1e309',
    'NaN',
    '',
    '9'.repeat(400),
    'a'.repeat(70_000),
  ),
)
const deep = (depth: number): unknown => {
  let v: unknown = 'x'
  for (let i = 0; i < depth; i++) v = { a: v }
  return v
}
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.anything({ maxDepth: 3, maxKeys: 5 }),
  hostileString,
  fc.constantFrom(null, true, -1, 0, 1e308, Number.MAX_SAFE_INTEGER + 2, [], {}, deep(2000), Array(5000).fill(1)),
  fc.constant(JSON.parse('{"__proto__": {"role": "owner"}, "constructor": {"prototype": {"admin": true}}}')),
)

function bodyFor(op: Operation): fc.Arbitrary<unknown> {
  const shaped = op.bodyKeys.length
    ? fc.dictionary(fc.constantFrom(...op.bodyKeys, 'role', 'userId', '__proto__'), hostileValue, {
        maxKeys: op.bodyKeys.length + 2,
      })
    : fc.constant({})
  return fc.oneof(shaped, hostileValue)
}

const request = (op: Operation) =>
  fc.record({
    params: fc.array(hostileString, { minLength: 4, maxLength: 4 }),
    query: fc.dictionary(fc.constantFrom(...op.queryKeys, 'limit', 'cursor', '__proto__'), hostileString, { maxKeys: 3 }),
    body: bodyFor(op),
    rawBody: fc.option(fc.constantFrom('{"a":', '\xff\xfe{}', '[]', 'null', '{"a":1}'.repeat(3)), { nil: undefined }),
    who: fc.constantFrom('member', 'member', 'admin', 'none', 'garbage'),
    garbageCookie: fc.constantFrom('better-auth.session_token=%E0%A4%A', 'better-auth.session_token=abc.def', 'x=%', '==;;=='),
    origin: fc.constantFrom(WEB_ORIGIN, WEB_ORIGIN, 'null', 'https://evil.example'),
  })

/** Percent-encodes like a client would; a lone surrogate (not encodable) goes out as raw bytes. */
function encodePathSegment(value: string): string {
  try {
    return encodeURIComponent(value)
  } catch {
    return [...Buffer.from(value)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')
  }
}

// Every table but the migrations' and the audit log's, counted in one query per check.
const counted = (
  await sql<{ table_name: string }>`
    select table_name from information_schema.tables
    where table_schema = 'public' and table_type = 'BASE TABLE'
      and table_name not in ('kysely_migration', 'kysely_migration_lock', 'audit_event')
    order by table_name`.execute(app.db)
).rows.map((r) => r.table_name)
const countQuery = sql<Record<string, number>>`select ${sql.join(
  counted.map((name) => sql`(select count(*)::int from ${sql.table(name)}) as ${sql.ref(name)}`),
)}`

async function rowCounts(): Promise<Record<string, number>> {
  return (await countQuery.execute(app.db)).rows[0]!
}

/** The GET routes of emailed links that answer a person with an HTML page, a used link included. */
const LINK_PAGES = new Set(['/api/auth/security-notice', '/api/auth/magic-link/verify', '/api/auth/change-email/approve'])

for (const op of operations) {
  t.test(`${op.method} ${op.path} never answers 5xx and refuses cleanly`, async (t) => {
    let refused = 0
    await fc.assert(
      fc.asyncProperty(request(op), async (r) => {
        let i = 0
        const url = op.path.replace(/\{[^}]+\}/g, () => encodePathSegment(r.params[i++] ?? 'x'))
        const qs = new URLSearchParams(r.query).toString()
        const headers: Record<string, string> = { origin: r.origin }
        if (r.who === 'member') headers.cookie = member.cookie
        if (r.who === 'admin') headers.cookie = admin.cookie
        if (r.who === 'garbage') headers.cookie = r.garbageCookie
        const hasBody = !['GET', 'HEAD', 'DELETE'].includes(op.method) || op.path === '/api/v1/me'
        let payload: string | undefined
        if (hasBody) {
          headers['content-type'] = 'application/json'
          payload = r.rawBody ?? JSON.stringify(r.body)
        }
        const before = await rowCounts()
        const res = await app.inject({ method: op.method as 'GET', url: qs ? `${url}?${qs}` : url, headers, payload })
        const what = `${op.method} ${url} -> ${res.statusCode} ${res.body.slice(0, 300)}`
        // Throwing (not t.ok) lets fast-check shrink a failure to its smallest counterexample.
        // The identity-provider routes answer 503 by contract while no provider is configured.
        const notConfigured = res.statusCode === 503 && /idp|social/.test(op.path) && res.json().code === 'SERVICE_UNAVAILABLE'
        if (res.statusCode >= 500 && !notConfigured) throw new Error(`5xx: ${what}`)
        if (res.statusCode >= 400) {
          // The pages an emailed link opens answer an unknown or used link with a page, for a person
          // (their 400 is declared text/html); anything else is the one error shape.
          const page = op.method === 'GET' && LINK_PAGES.has(op.path) && /^text\/html/.test(String(res.headers['content-type']))
          const body = page ? { code: 'PAGE', status: res.statusCode, message: '' } : res.json()
          if (typeof body.code !== 'string' || body.status !== res.statusCode || typeof body.message !== 'string') {
            throw new Error(`not the error shape: ${what}`)
          }
          if (/at .*\.(ts|js):\d+|node_modules|SELECT |INSERT /i.test(res.body)) throw new Error(`leaks internals: ${what}`)
          const after = await rowCounts()
          if (JSON.stringify(after) !== JSON.stringify(before)) {
            throw new Error(`refused but wrote rows: ${what}\nbefore ${JSON.stringify(before)}\nafter ${JSON.stringify(after)}`)
          }
          refused++
        }
      }),
      { numRuns: RUNS },
    )
    t.pass(`${RUNS} hostile requests, ${refused} refused cleanly`)
  })
}

t.test('the document covers the routes', async (t) => {
  t.ok(operations.length >= 5, `${operations.length} operations exercised`)
})

t.test('the operations exercised are every route of the app but the named exceptions', async (t) => {
  const routes = routeTable(app)
  const exercised = operations.map((op) => `${op.method} ${op.path.replace(/\{([^}]+)\}/g, ':$1')}`).sort()
  const expected = [...new Set(routes.filter((r) => !exception(r)).map(key))].sort()
  t.same(exercised, expected, `${exercised.length} operations exercised of ${routes.length} method/route pairs`)
  for (const [reason, applies] of NOT_EXERCISED) {
    t.ok(routes.some(applies), `the exception "${reason}" still names a route`)
  }
  for (const r of routes.filter((r) => r.method === 'HEAD')) {
    t.ok(exercised.includes(`GET ${r.pattern}`) || exception({ ...r, method: 'GET' }), `${key(r)}: its GET is exercised or named`)
  }
  // Each procedure's REST twin is exercised, and every procedure route is one of the contract's.
  const twins: Array<[name: string, rest: string]> = []
  traverseContractProcedures({ router: contract, path: [] }, ({ contract: procedure, path }) => {
    const { route } = procedure['~orpc'] as { route: { method?: string; path?: string } }
    twins.push([path.join('.'), `${route.method} /api/v1${route.path!.replace(/\{(\w+)\}/g, ':$1')}`])
  })
  for (const [name, rest] of twins) t.ok(exercised.includes(rest), `${name}: its REST twin ${rest} is exercised`)
  t.same(
    [...new Set(routes.flatMap((r) => (r.procedure ? [r.procedure] : [])))].sort(),
    twins.map(([name]) => name).sort(),
    'the procedure routes are exactly the contract procedures',
  )
})
