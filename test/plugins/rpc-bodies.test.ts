// Property-based: every procedure of the contract, fed generated RPC bodies ({json, meta, maps} and
// worse) that oRPC's decoder cannot take, answers a 4xx in oRPC's error envelope: never a 5xx, nothing
// written, and no prototype of the process polluted. Meta items carry every type code oRPC knows
// (and some it does not), paths through __proto__, constructor and prototype, through values that
// are not there or not objects; bodies are of the wrong type, deep or large. A second property sends
// well-formed bodies whose `json` has the wrong type to every procedure that takes input (served by
// the plain-call path, plugins/rpc-direct.ts), and a third sends envelopes of every kind to the
// procedures that only read: a 2xx exactly where oRPC's decoder and the input schema take the body.
// The seed is fixed: a failure names its body, and a run repeats it.
import { StandardRPCJsonSerializer, StandardRPCSerializer } from '@orpc/client/standard'
import { traverseContractProcedures } from '@orpc/server'
import fc from 'fast-check'
import { sql } from 'kysely'
import t from 'tap'
import { buildTestApp, signUp, signUpWithRole, WEB_ORIGIN } from '../helpers/app.js'
import { contract } from '../helpers/contract.js'

const app = await buildTestApp({ env: { RATE_LIMIT_PASSWORD_CHECKS_PER_MINUTE: '1000000' } })
const member = await signUp(app)
const admin = await signUpWithRole(app, 'admin')

const RUNS = Number(process.env.HOSTILE_RUNS ?? 8)
const SEED = Number(process.env.HOSTILE_SEED ?? 36)

interface Procedure {
  path: string
  get: boolean
  takesInput: boolean
  admin: boolean
  input?: { safeParse(value: unknown): { success: boolean } }
}
const procedures: Procedure[] = []
traverseContractProcedures({ router: contract, path: [] }, ({ contract: procedure, path }) => {
  const orpc = procedure['~orpc'] as {
    route: { method?: string }
    inputSchema?: { safeParse(value: unknown): { success: boolean } }
    meta: unknown
  }
  const access = (orpc.meta as { policy?: { access?: unknown } }).policy?.access
  procedures.push({
    path: path.join('/'),
    get: orpc.route.method === 'GET',
    // A procedure that also takes no input answers a body that is no envelope: that is oRPC's rule.
    takesInput: orpc.inputSchema !== undefined && !orpc.inputSchema.safeParse(undefined).success,
    admin: typeof access === 'object',
    input: orpc.inputSchema,
  })
})

// Every table's row count: a refused call leaves them all as they were.
async function rowCounts(): Promise<Record<string, number>> {
  const { rows } = await sql<{ table_name: string }>`
    select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'
    and table_name not like 'kysely_%' order by table_name`.execute(app.db)
  const counts: Record<string, number> = {}
  for (const { table_name } of rows) {
    const count = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table_name)}`.execute(app.db)
    counts[table_name] = count.rows[0]!.n
  }
  return counts
}

const prototypes = [Object.prototype, Array.prototype, Function.prototype, String.prototype, Number.prototype]
const ownKeys = () => prototypes.map((p) => Reflect.ownKeys(p).map(String).sort().join(','))

// The type codes oRPC's JSON serializer knows (0 bigint ... 7 map) and a few it does not.
const typeCode = fc.oneof(fc.integer({ min: 0, max: 9 }), fc.constantFrom(-1, 1.5, '1', null, 99))
const dangerous = fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty')
// A segment that is surely absent: every generated body is then refused by the decoder.
const absent = fc.constantFrom('__proto__', 'constructor', 'prototype', 'missing', '0', 'length')
const segment = fc.oneof(dangerous, fc.constantFrom('a', 'b', '0', 0, 1, ''), fc.string({ maxLength: 8 }))
const leaf = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 20 }),
  fc.constantFrom('abc', '2026-13-45', 'x'.repeat(1000), '9'.repeat(400), '/[/', 'not a url'),
)
const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('value'), { maxLength: 4 }), tie('object')),
  object: fc.dictionary(
    fc.oneof(fc.constantFrom('a', 'b', '0', 'constructor', 'prototype'), fc.string({ maxLength: 6 })),
    tie('value'),
    {
      maxKeys: 4,
    },
  ),
})).value
/** A value nested `depth` deep, in objects or arrays. */
const deep = fc.tuple(fc.integer({ min: 50, max: 3000 }), fc.boolean()).map(([depth, arrays]) => {
  let value: unknown = 1
  for (let i = 0; i < depth; i++) value = arrays ? [value] : { a: value }
  return value
})
const huge = fc
  .integer({ min: 10_000, max: 60_000 })
  .map((n) => ({ a: 'x'.repeat(n), b: Array.from({ length: 200 }, (_, i) => i) }))

/** A meta item that cannot be applied: a path through something absent, or a conversion that throws. */
const badMetaItem = fc.oneof(
  fc.tuple(typeCode, fc.array(segment, { maxLength: 3 }), absent).map(([code, path, last]) => [code, ...path, last]),
  fc.tuple(typeCode, dangerous, fc.array(segment, { maxLength: 4 })).map(([code, first, rest]) => [code, first, ...rest]),
  fc.tuple(typeCode, fc.array(segment, { minLength: 2000, maxLength: 2000 })).map(([code, path]) => [code, ...path]),
  fc.oneof(fc.constant(null), fc.integer(), fc.string(), fc.constant({}), fc.constant([])),
)
const maps = fc.oneof(
  fc.constant(undefined),
  fc.array(fc.array(segment, { maxLength: 3 }), { maxLength: 3 }),
  fc.oneof(fc.constant(null), fc.string(), fc.integer(), fc.constant({ 0: ['__proto__'] })),
)
// oRPC's own decoder, the oracle of what its protocol refuses: a generated body it would take (a
// meta item of an unknown type, say) could call a procedure for real, so it is never sent.
const decoder = new StandardRPCSerializer(new StandardRPCJsonSerializer())
const decoderRefuses = (body: unknown): boolean => {
  try {
    decoder.deserialize(JSON.parse(JSON.stringify(body)))
    return false
  } catch {
    return true
  }
}

/** A body oRPC's decoder refuses. */
const malformedBody = fc
  .oneof(
    // No envelope at all. (oRPC reads another value that is not an object as a call without input:
    // the second property below sends such values to the procedures that take input.)
    fc.constant(null),
    // An envelope whose meta is not a list of items.
    // (A string is iterable: oRPC reads its characters as items of unknown types and ignores them.)
    fc.record({ json: jsonValue, meta: fc.oneof(fc.constant(null), fc.integer(), fc.boolean(), fc.constant({ 0: [1, 'a'] })) }),
    // An envelope with at least one item that cannot be applied.
    fc
      .record({
        json: fc.oneof(jsonValue, deep, huge),
        meta: fc.tuple(fc.array(fc.tuple(typeCode, segment), { maxLength: 2 }), badMetaItem),
        maps,
      })
      .map(({ json, meta: [before, bad], maps }) => ({ json, meta: [...before, bad], ...(maps !== undefined && { maps }) })),
  )
  .filter(decoderRefuses)
/** A well-formed envelope whose value cannot be any procedure's object input. */
const wrongType = fc.record({
  json: fc.oneof(fc.integer(), fc.string({ maxLength: 30 }), fc.boolean(), fc.array(leaf, { maxLength: 3 }), deep),
  meta: fc.constant([]),
})
/** A body that is no envelope: oRPC reads it as a call without input, which such a procedure refuses. */
const notAnEnvelope = fc.oneof(fc.integer(), fc.string({ maxLength: 30 }), fc.boolean(), fc.array(leaf, { maxLength: 3 }))

async function send(procedure: Procedure, body: unknown, asGet: boolean) {
  const cookie = procedure.admin ? admin.cookie : member.cookie
  const url = `/api/v1/${procedure.path}`
  const payload = JSON.stringify(body)
  return asGet
    ? app.inject({ method: 'GET', url, query: { data: payload }, headers: { cookie, origin: WEB_ORIGIN } })
    : app.inject({
        method: 'POST',
        url,
        payload,
        headers: { cookie, origin: WEB_ORIGIN, 'content-type': 'application/json' },
      })
}

function refusedInEnvelope(res: Awaited<ReturnType<typeof send>>): string | undefined {
  if (res.statusCode < 400 || res.statusCode >= 500) return `answered ${res.statusCode}: ${res.body.slice(0, 200)}`
  let body: { json?: { defined?: unknown; code?: unknown; status?: unknown; message?: unknown } }
  try {
    body = res.json()
  } catch {
    return `not JSON: ${res.body.slice(0, 200)}`
  }
  const error = body.json
  if (
    error?.defined !== false ||
    typeof error.code !== 'string' ||
    error.status !== res.statusCode ||
    typeof error.message !== 'string'
  )
    return `not oRPC's error envelope: ${res.body.slice(0, 200)}`
  if (/at .+\(.*:\d+:\d+\)|node_modules|\.ts:\d+/.test(res.body)) return 'carries a stack trace or a path'
  return undefined
}

const before = { rows: await rowCounts(), prototypes: ownKeys() }

t.test('a body oRPC cannot decode: a 4xx in the envelope from every procedure, POST and GET', async (t) => {
  for (const procedure of procedures) {
    const failures: string[] = []
    await fc
      .assert(
        fc.asyncProperty(malformedBody, fc.boolean(), async (body, viaGet) => {
          const res = await send(procedure, body, viaGet && procedure.get)
          const problem = refusedInEnvelope(res)
          if (problem) failures.push(`${JSON.stringify(body).slice(0, 160)} -> ${problem}`)
          return problem === undefined
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      )
      .catch(() => {})
    t.same(failures, [], `${procedure.path}: every malformed body refused with a 4xx`)
  }
})

t.test('the body null, and meta paths through __proto__, constructor and prototype, are 400 BAD_REQUEST', async (t) => {
  const fixed: Array<[string, unknown]> = [
    ['null', null],
    ['meta through __proto__', { json: { a: 1 }, meta: [[1, '__proto__', 'polluted']] }],
    ['meta through constructor', { json: { a: 1 }, meta: [[1, 'constructor', 'prototype', 'polluted']] }],
    ['meta through prototype', { json: {}, meta: [[0, 'prototype']] }],
    ['meta through a null', { json: { a: null }, meta: [[1, 'a', 'b']] }],
    ['a bigint that is not a number', { json: { a: 'abc' }, meta: [[0, 'a']] }],
    ['a URL that is not one', { json: { a: 'not a url' }, meta: [[4, 'a']] }],
    ['a RegExp that does not compile', { json: { a: '/[/' }, meta: [[5, 'a']] }],
    ['a Set of a number', { json: { a: 1 }, meta: [[6, 'a']] }],
    ['a Map of a string', { json: { a: 'x' }, meta: [[7, 'a']] }],
    ['meta that is not a list', { json: {}, meta: 5 }],
    ['maps that are not a list', { json: {}, meta: [[1, 'missing']], maps: 'x' }],
  ]
  for (const procedure of procedures) {
    for (const [name, body] of fixed) {
      const res = await send(procedure, body, false)
      t.equal(res.statusCode, 400, `${procedure.path}: ${name} is 400`)
      t.equal(res.json().json?.code, 'BAD_REQUEST', `${procedure.path}: ${name} is BAD_REQUEST`)
    }
  }
})

t.test('a well-formed envelope of the wrong type: a 4xx from every procedure that takes input', async (t) => {
  for (const procedure of procedures.filter((p) => p.takesInput)) {
    const failures: string[] = []
    await fc
      .assert(
        fc.asyncProperty(fc.oneof(wrongType, notAnEnvelope), async (body) => {
          const problem = refusedInEnvelope(await send(procedure, body, false))
          if (problem) failures.push(`${JSON.stringify(body).slice(0, 160)} -> ${problem}`)
          return problem === undefined
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      )
      .catch(() => {})
    t.same(failures, [], `${procedure.path}: every wrong-typed input refused with a 4xx`)
  }
})

// The procedures that only read (a call that works writes nothing): every envelope, 2xx or 4xx.
const READS = new Set(['getProfile', 'getPlanAndUsage', 'consent/getConsents', 'journal/listEntries', 'payment/listPayments'])
const anyEnvelope = fc.oneof(
  malformedBody,
  wrongType,
  notAnEnvelope,
  fc.record({
    json: fc.oneof(jsonValue, fc.constant({}), fc.constant({ limit: 5 })),
    meta: fc.array(fc.tuple(typeCode), { maxLength: 2 }),
  }),
  fc.record({ json: fc.constant({ limit: 3 }), meta: fc.constantFrom([], [[0, 'limit']], [[3, 'limit']], [[1, 'limit']]) }),
)

t.test('any envelope at a procedure that reads: 2xx exactly where oRPC and the schema take it, else a 4xx', async (t) => {
  for (const procedure of procedures.filter((p) => READS.has(p.path))) {
    const failures: string[] = []
    const seen = { accepted: 0, refused: 0 }
    await fc
      .assert(
        fc.asyncProperty(anyEnvelope, fc.boolean(), async (body, viaGet) => {
          const res = await send(procedure, body, viaGet && procedure.get)
          let accepted: boolean
          try {
            accepted = procedure.input?.safeParse(decoder.deserialize(JSON.parse(JSON.stringify(body)))).success ?? true
          } catch {
            accepted = false
          }
          seen[accepted ? 'accepted' : 'refused']++
          const problem = accepted
            ? res.statusCode === 200
              ? undefined
              : `answered ${res.statusCode} to a body oRPC and the schema take: ${res.body.slice(0, 200)}`
            : refusedInEnvelope(res)
          if (problem) failures.push(`${JSON.stringify(body).slice(0, 160)} -> ${problem}`)
          return problem === undefined
        }),
        { numRuns: RUNS * 2, seed: SEED, endOnFailure: true },
      )
      .catch(() => {})
    t.same(failures, [], `${procedure.path}: 2xx or 4xx as the body deserves`)
    t.ok(seen.accepted > 0 && seen.refused > 0, `${procedure.path}: bodies of both kinds were sent (${JSON.stringify(seen)})`)
  }
})

t.test('nothing was written and no prototype was polluted', async (t) => {
  t.same(await rowCounts(), before.rows, 'every table has the rows it had')
  t.same(ownKeys(), before.prototypes, "the built-in prototypes' keys are unchanged")
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'no inherited "polluted"')
})
