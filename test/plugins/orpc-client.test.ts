// oRPC 1.14's OpenAPILink over the REST view, with the contract the service ships, against the real
// app over a real socket, with the session cookie and a trusted Origin, as a REST-minded client would
// (the web front end itself speaks the RPC protocol: test/contract/rpc-link.test.ts). Our error bodies carry `defined: false`, so oRPC reads
// them as its own error JSON: an ORPCError with exactly our code, status, message and data, instead
// of a code guessed from the status.
import { createORPCClient, ORPCError } from '@orpc/client'
import type { ContractRouterClient } from '@orpc/contract'
import { OpenAPILink } from '@orpc/openapi-client/fetch'
import t, { type Test } from 'tap'
import { contract } from '../helpers/contract.js'
import { buildTestApp, signUp, WEB_ORIGIN } from '../helpers/app.js'

const app = await buildTestApp()
await app.listen({ port: 0, host: '127.0.0.1' })
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`

// The contract the service ships (src/contract/), whose routes are the REST view's.
const clientFor = (cookie?: string): ContractRouterClient<typeof contract> =>
  createORPCClient(
    new OpenAPILink(contract, { url: `${base}/api/v1`, headers: { origin: WEB_ORIGIN, ...(cookie ? { cookie } : {}) } }),
  )

/** The same request straight over HTTP: what our API answered, byte for byte. */
async function raw(method: string, path: string, cookie?: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      origin: WEB_ORIGIN,
      ...(cookie ? { cookie } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, json: (await res.json()) as Record<string, unknown> }
}

/** The ORPCError the call rejects with (fails the test when it resolves or throws something else). */
async function orpcErrorOf(t: Test, call: Promise<unknown>): Promise<ORPCError<string, unknown>> {
  try {
    await call
  } catch (err) {
    t.ok(err instanceof ORPCError, 'an ORPCError')
    return err as ORPCError<string, unknown>
  }
  t.fail('the call succeeded')
  throw new Error('unreachable')
}

const member = await signUp(app, { name: 'Orpc Member' })
const client = clientFor(member.cookie)

t.test('happy answers: getProfile, updateProfile, getPlanAndUsage', async (t) => {
  const profile = await client.getProfile()
  t.match(profile, { id: member.id, email: member.email, name: 'Orpc Member', birthDate: null })

  const updated = await client.updateProfile({ name: 'Renamed by oRPC', birthDate: '1990-04-01', timezone: 'Asia/Jakarta' })
  t.match(updated, { id: member.id, name: 'Renamed by oRPC', birthDate: '1990-04-01', timezone: 'Asia/Jakarta' })
  t.match(await client.getProfile(), { name: 'Renamed by oRPC' }, 'the change is stored')

  const plan = await client.getPlanAndUsage()
  t.equal(plan.plan, 'free')
  t.match(plan.usage, [{ metric: String, used: 0 }])
})

t.test('every REST route of the contract is a route of the app, at its method and path', async (t) => {
  const { traverseContractProcedures } = await import('@orpc/server')
  const walked: string[] = []
  traverseContractProcedures({ router: contract, path: [] }, ({ contract: procedure, path }) => {
    const { method, path: rest } = procedure['~orpc'].route
    const url = `/api/v1${rest!.replace(/\{(\w+)\}/g, ':$1')}`
    t.ok(app.hasRoute({ method: method!, url }), `${path.join('.')}: ${method} ${url}`)
    walked.push(path.join('.'))
  })
  const served = new Set(app.registeredRoutes.flatMap((r) => (r.config?.procedure ? [r.config.procedure] : [])))
  t.same(walked.sort(), [...served].sort(), 'the contract names exactly the procedures the app serves')
})

t.test('a validation error is an ORPCError with our exact code, status, message and data', async (t) => {
  for (const [label, input] of [
    ['a date before 1900', { birthDate: '1800-01-01' }],
    ['an unknown zone', { timezone: 'Mars/Olympus' }],
    ['an unknown key', { unknownKey: 'x' }],
  ] as const) {
    const expected = await raw('PATCH', '/api/v1/profile', member.cookie, input)
    t.equal(expected.status, 400, label)
    // Sent as it is: the contract's types would not let a caller write the unknown key.
    const err = await orpcErrorOf(t, client.updateProfile(input as never))
    t.equal(err.code, 'VALIDATION_ERROR', label)
    t.equal(err.status, 400, label)
    t.equal(err.message, expected.json.message, label)
    t.same(err.data, expected.json.data, label)
    t.match(err.data, { issues: [{ path: String, message: String }] }, label)
    t.equal(err.defined, false, label)
  }
  t.match(await client.getProfile(), { name: 'Renamed by oRPC', birthDate: '1990-04-01' }, 'nothing was written')
})

t.test('FORBIDDEN and UNAUTHORIZED come back as ORPCError too', async (t) => {
  const forbidden = await orpcErrorOf(t, client.admin.listUsers({}))
  const expected = await raw('GET', '/api/v1/admin/users', member.cookie)
  t.same(
    {
      code: forbidden.code,
      status: forbidden.status,
      message: forbidden.message,
      data: forbidden.data,
      defined: forbidden.defined,
    },
    { code: 'FORBIDDEN', status: 403, message: expected.json.message, data: undefined, defined: false },
  )

  const anonymous = await orpcErrorOf(t, clientFor().getProfile())
  t.same(
    [anonymous.code, anonymous.status, anonymous.message, anonymous.defined],
    ['UNAUTHORIZED', 401, (await raw('GET', '/api/v1/profile')).json.message, false],
  )
})

t.test('every error body carries defined: false, whatever produced it', async (t) => {
  const cases: Array<[string, Promise<{ status: number; json: Record<string, unknown> }>, number]> = [
    ['unknown route', raw('GET', '/api/v1/no-such-route'), 404],
    ['no session', raw('GET', '/api/v1/whoami'), 401],
    ['validation', raw('POST', '/api/auth/sign-in/email', undefined, { email: 'not-an-email', password: 'x' }), 400],
    ['malformed URL', raw('GET', '/api/v1/admin/users/%E0%A4%A'), 400],
    ['payload too large', raw('PATCH', '/api/v1/profile', member.cookie, { name: 'x'.repeat(70 * 1024) }), 413],
  ]
  for (const [label, pending, status] of cases) {
    const res = await pending
    t.equal(res.status, status, label)
    t.match(res.json, { code: String, status, message: String, defined: false }, label)
  }

  const limited = await buildTestApp({ env: { RATE_LIMIT_GLOBAL_PER_MINUTE: '1' } })
  t.equal((await limited.inject({ method: 'GET', url: '/api/v1/whoami' })).statusCode, 401)
  const over = await limited.inject({ method: 'GET', url: '/api/v1/whoami' })
  t.equal(over.statusCode, 429)
  t.same(
    over.json(),
    {
      code: 'RATE_LIMITED',
      status: 429,
      message: over.json().message,
      data: { retryAfter: Number(over.headers['retry-after']) },
      defined: false,
    },
    'the rate limiter',
  )

  const document = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json()
  const errorSchema = document.components.schemas.Error
  t.ok(errorSchema.required.includes('defined'), 'the OpenAPI error schema requires it')
  t.match(errorSchema.properties.defined, { const: false })
  t.match(errorSchema.properties.data.description, /retryAfter/, 'and says where the wait is')
})
