// The plain RPC call without oRPC's handler, the same bytes. A CPU profile of getProfile through
// RPCLink under load put 14% of the server's time in @orpc/server's StandardHandler and what it
// calls per request (a URL, interceptor and span layers, a procedure client with its error map),
// beyond what the REST twin pays. A call whose envelope carries no meta (what RPCLink sends for any
// input without Dates, bigints, sets, ...) is served here by the steps oRPC runs, in its order:
// decode, the CSRF rule, the strict GET rule, the input schema, the handler, the output schema,
// and oRPC's encoding of the answer. Any other body goes to oRPC's handler (operations.ts), so
// every decoding oRPC refuses is refused by oRPC's own code. test/plugins/rpc-direct.test.ts
// compares both paths' answers for every procedure.
import { StandardRPCJsonSerializer, StandardRPCSerializer } from '@orpc/client/standard'
import { type AnyContractProcedure, ORPCError, ValidationError } from '@orpc/contract'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { InputError, type InputIssue } from '../shared/errors.js'
import type { MaybePromise } from '../shared/maybe-async.js'

type Schema = AnyContractProcedure['~orpc']['inputSchema']
type Handler = (input: unknown, request: FastifyRequest, reply: FastifyReply) => MaybePromise<unknown>

/** A call whose body is more than plain JSON: oRPC's handler takes it. */
export const NOT_PLAIN = Symbol('not plain')
const DATA_ONLY = /^data=([^&#]*)$/

const isEnvelope = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * The input of a plain call, decoded as oRPC's StandardRPCCodec decodes it: the envelope
 * `{json, meta?}` with no meta (or `[]`), in the body or, for a GET, in the one `data` parameter;
 * or no envelope at all (no input). NOT_PLAIN for anything else, for oRPC's own decoder: meta to
 * apply, a body that is no envelope, JSON it cannot parse, a query it would read otherwise.
 */
export function plainInput(request: FastifyRequest): unknown {
  let envelope: unknown = request.body
  if (request.method === 'GET') {
    const at = request.url.indexOf('?')
    const query = at === -1 ? '' : request.url.slice(at + 1)
    if (query === '') return undefined
    const data = DATA_ONLY.exec(query)?.[1]
    if (data === undefined) return NOT_PLAIN
    try {
      // URLSearchParams' reading of a well-formed value; a malformed one throws and goes to oRPC.
      const text = decodeURIComponent(data.replaceAll('+', ' '))
      envelope = text === '' ? undefined : JSON.parse(text)
    } catch {
      return NOT_PLAIN
    }
  }
  if (envelope === undefined) return undefined
  if (!isEnvelope(envelope)) return NOT_PLAIN
  const { meta } = envelope
  if (meta !== undefined && !(Array.isArray(meta) && meta.length === 0)) return NOT_PLAIN
  return envelope.json
}

/** A value through a Standard Schema (zod's), as oRPC's procedure client runs it. */
function validated(
  schema: Schema,
  value: unknown,
  failed: (issues: readonly unknown[]) => ORPCError<string, unknown>,
): MaybePromise<unknown> {
  if (!schema) return value
  const settle = (result: Awaited<ReturnType<NonNullable<Schema>['~standard']['validate']>>) => {
    if (result.issues) throw failed(result.issues)
    return result.value
  }
  const result = schema['~standard'].validate(value)
  return result instanceof Promise ? result.then(settle) : settle(result)
}

// oRPC's errors, word for word (its procedure client's and its plugins').
const inputFailed = (input: unknown) => (issues: readonly unknown[]) =>
  new ORPCError('BAD_REQUEST', {
    message: 'Input validation failed',
    data: { issues },
    cause: new ValidationError({ message: 'Input validation failed', issues: issues as never, data: input }),
  })
const outputFailed = (output: unknown) => (issues: readonly unknown[]) =>
  new ORPCError('INTERNAL_SERVER_ERROR', {
    message: 'Output validation failed',
    cause: new ValidationError({ message: 'Output validation failed', issues: issues as never, data: output }),
  })

/** A rule the schema could not hold, broken: worded as oRPC words a failed input schema. */
export const orpcInputError = (issues: readonly InputIssue[]) =>
  new ORPCError('BAD_REQUEST', { message: 'Input validation failed', data: { issues } })

const KEEPS_ANSWER = Symbol('keeps its answer')

/**
 * Marks a handler whose answer is a frozen object that is never changed, only replaced (the
 * session cache's user and profile): its encoded answer is kept with it, as the REST routes keep
 * get-session's (shared/json-memo.ts), instead of validated and encoded again on every call.
 */
export function answersFrozen<H extends object>(handler: H): H {
  return Object.assign(handler, { [KEEPS_ANSWER]: true })
}

/** A procedure as its route serves a plain call. */
export interface DirectProcedure {
  procedure: AnyContractProcedure
  handler: Handler
  /** The procedure's declared method: a GET on any other is refused. */
  method: string
  /** SimpleCsrfProtectionHandlerPlugin is on (RPC_REQUIRE_CSRF_HEADER). */
  csrf: boolean
}

/** Serves a procedure's plain calls as oRPC's StandardRPCHandler serves them. */
export function directCaller({ procedure, handler, method, csrf }: DirectProcedure) {
  const { inputSchema, outputSchema } = procedure['~orpc']
  const kept = KEEPS_ANSWER in handler ? new WeakMap<object, string>() : undefined
  /**
   * The route policy ran before, as for every call; errors go to the one error handler as
   * operations.ts's captureFailure hands them over.
   */
  return async function callDirectly(input: unknown, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    // SimpleCsrfProtectionHandlerPlugin's rule, then StrictGetMethodPlugin's, after decoding as there.
    if (csrf && request.headers['x-csrf-token'] !== 'orpc')
      throw new ORPCError('CSRF_TOKEN_MISMATCH', { status: 403, message: 'Invalid CSRF token' })
    if (request.method === 'GET' && method !== 'GET') throw new ORPCError('METHOD_NOT_SUPPORTED')
    const value = await validated(inputSchema, input, inputFailed(input))
    let output: unknown
    try {
      output = await handler(value, request, reply)
    } catch (error) {
      throw error instanceof InputError ? orpcInputError(error.issues) : error
    }
    const keep = kept && typeof output === 'object' && output !== null && Object.isFrozen(output) ? output : undefined
    let body = keep && kept!.get(keep)
    if (body === undefined) {
      body = rpcJson(await validated(outputSchema, output, outputFailed(output)))
      if (keep) kept!.set(keep, body)
    }
    // What Fastify writes for the object oRPC's codec answers: its JSON, as application/json.
    return reply.code(200).header('content-type', 'application/json; charset=utf-8').send(body)
  }
}

/** oRPC's RPC serializer, as its StandardRPCHandler builds it: for what rpcJson does not encode itself. */
const rpcSerializer = new StandardRPCSerializer(new StandardRPCJsonSerializer())
const UNUSUAL = Symbol('unusual')
const DATE = 1 // StandardRPCJsonSerializer's type code of a Date

/**
 * The body oRPC's codec answers a value with, `{json, meta?}`, as JSON. The values procedures
 * answer (JSON values and Dates) are encoded here as StandardRPCJsonSerializer encodes them (the
 * same walk, keys in the same order, a Date's meta entry where it visits it) without a path array
 * per key; a value of any other type it knows (a bigint, NaN, a URL, a RegExp, a Set, a Map, a
 * Blob, undefined in an array) goes through it.
 */
export function rpcJson(value: unknown): string {
  const meta: unknown[][] = []
  try {
    const json = encode(value, [], meta)
    return JSON.stringify({ json, meta: meta.length === 0 ? undefined : meta })
  } catch (error) {
    if (error !== UNUSUAL) throw error
    return JSON.stringify(rpcSerializer.serialize(value))
  }
}

/** @orpc/shared's isObject: a plain or null-prototype object, which oRPC walks key by key. */
function walksKeys(value: object): boolean {
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || !proto || !proto.constructor
}

function encode(value: unknown, path: Array<string | number>, meta: unknown[][]): unknown {
  if (typeof value !== 'object' || value === null) {
    if (typeof value === 'bigint' || Number.isNaN(value)) throw UNUSUAL
    return value
  }
  if (value instanceof Date) {
    meta.push([DATE, ...path])
    return Number.isNaN(value.getTime()) ? null : value.toISOString()
  }
  if (Array.isArray(value)) {
    const json = new Array(value.length)
    for (let i = 0; i < value.length; i++) {
      const item = value[i]
      if (item === undefined) throw UNUSUAL
      path.push(i)
      json[i] = encode(item, path, meta)
      path.pop()
    }
    return json
  }
  if (!walksKeys(value)) {
    if (value instanceof Blob || value instanceof URL || value instanceof RegExp || value instanceof Set || value instanceof Map)
      throw UNUSUAL
    return value
  }
  const json: Record<string, unknown> = {}
  const object = value as Record<string, unknown>
  for (const key in object) {
    const item = object[key]
    if (key === 'toJSON' && typeof item === 'function') continue
    path.push(key)
    json[key] = encode(item, path, meta)
    path.pop()
  }
  return json
}
