// The business surface from one declaration per operation (src/shared/operation.ts): each
// contract procedure becomes
// - its oRPC procedure at /api/v1/<router path>, answered by @orpc/server's own StandardRPCHandler
//   (the protocol the web front end's RPCLink speaks: {json, meta} in and out, Dates in meta, GET
//   only for the procedures declared GET, oRPC's BAD_REQUEST for input that fails its schema), or
//   for a call whose envelope carries no meta by the same steps without that handler (rpc-direct.ts), and
// - its REST twin at the declared method and path, whose zod schemas make its OpenAPI entry.
// Both are Fastify routes carrying the declaration's policy in `config.policy`, so the one
// route-policy hook checks them alike under every spelling of their path, and every error of both
// goes through the one error handler (plugins/errors.ts wraps a procedure's in the RPC envelope).
// Both validate the input with the same schema and call the same handler.
import type {
  AnyContractProcedure,
  AnyContractRouter,
  ContractProcedure,
  InferSchemaInput,
  InferSchemaOutput,
} from '@orpc/contract'
import { isContractProcedure } from '@orpc/contract'
import { implement, ORPCError, type AnyRouter } from '@orpc/server'
import { SimpleCsrfProtectionHandlerPlugin, StrictGetMethodPlugin } from '@orpc/server/plugins'
import { type StandardHandlerInterceptorOptions, StandardRPCHandler } from '@orpc/server/standard'
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify'
import { z } from 'zod'
import type { OperationMeta } from '../shared/operation.js'
import { ErrorSchema, InputError, type InputIssue } from '../shared/errors.js'
import type { MaybePromise } from '../shared/maybe-async.js'
import { validationFailed } from './errors.js'
import { addBatchRoute } from './batches.js'
import { directCaller, NOT_PLAIN, orpcInputError, plainInput } from './rpc-direct.js'

/** Where both protocols live: RPCLink's `url` and the REST paths' prefix. */
export const API_PREFIX = '/api/v1'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Plain calls (no meta) skip oRPC's handler for the same steps in the same order (below); false
     * sends every call through it (the test that proves both answer alike builds such an app).
     */
    rpcFastPath: boolean
  }
  interface FastifyContextConfig {
    /** On an oRPC procedure's route: its path ("journal.createEntry"). Errors then travel in the RPC envelope. */
    procedure?: string
  }
}

type Handler<P> =
  P extends ContractProcedure<infer I, infer O, infer _E, infer _M>
    ? (input: InferSchemaOutput<I>, request: FastifyRequest, reply: FastifyReply) => MaybePromise<InferSchemaInput<O>>
    : never

/**
 * The handlers of a contract router: for each procedure, a function of its parsed input and the
 * request (and its reply, for a header or a cookie; the answer itself is the returned value).
 */
export type Handlers<C> = { [K in keyof C]: C[K] extends AnyContractProcedure ? Handler<C[K]> : Handlers<C[K]> }

type AnyHandler = (input: unknown, request: FastifyRequest, reply: FastifyReply) => MaybePromise<unknown>

interface Declared {
  path: string[]
  procedure: AnyContractProcedure
  handler: AnyHandler
  /** A guest may call it (the policy's `guests`): every operation of a domain that a guest may use. */
  guests?: true
}

interface RpcContext {
  request: FastifyRequest
  reply: FastifyReply
  /**
   * The error a call ended in, handed back to Fastify's error handler (and the policy's onError
   * hooks); `called` once the body was decoded and the procedure's own call began.
   */
  failure: { error?: unknown; called?: boolean }
}

function declarations(contract: AnyContractRouter, handlers: object, path: string[] = []): Declared[] {
  return Object.entries(contract).flatMap(([key, entry]) => {
    const handler = (handlers as Record<string, unknown>)[key]
    if (handler === undefined) throw new Error(`No handler for the operation ${[...path, key].join('.')}`)
    if (isContractProcedure(entry)) return [{ path: [...path, key], procedure: entry, handler: handler as AnyHandler }]
    return declarations(entry as AnyContractRouter, handler as object, [...path, key])
  })
}

/** The oRPC router of the operations: each procedure's handler, called with the request it came in. */
function routerOf(declared: Declared[]): AnyRouter {
  const router: Record<string, unknown> = {}
  for (const { path, procedure, handler } of declared) {
    let node = router
    for (const key of path.slice(0, -1)) {
      node[key] ??= {}
      node = node[key] as Record<string, unknown>
    }
    node[path.at(-1)!] = implement<AnyContractProcedure, RpcContext>(procedure).handler(({ input, context }) =>
      handler(input, context.request, context.reply),
    )
  }
  return router as AnyRouter
}

/** The declared route of a procedure, with what every operation must state. */
function routeOf({ path, procedure, guests }: Declared) {
  const route = procedure['~orpc'].route
  if (!route.method || !route.path) throw new Error(`Operation ${path.join('.')} declares no REST method and path`)
  const declaredMeta = procedure['~orpc'].meta as OperationMeta
  const meta = guests ? { ...declaredMeta, policy: { ...declaredMeta.policy, guests } } : declaredMeta
  // A per-email budget reads the body's email; a procedure's body is {json, meta}, where it would find none.
  if (meta.policy?.rateLimit?.perEmail) throw new Error(`Operation ${path.join('.')}: per-email budgets are for plain routes`)
  return { ...route, method: route.method, path: route.path, meta }
}

const PATH_KEY = /\{(\w+)\}/g

/** An input schema's keys in the REST path ("/journal/entries/{id}") go to params, the rest to the body or query. */
function restParts(input: z.ZodType | undefined, pathKeys: string[], where: 'body' | 'querystring') {
  if (!input) return {}
  if (pathKeys.length === 0) return { [where]: input }
  const shape = (input as z.ZodObject).shape
  const pick = (keep: (key: string) => boolean) =>
    z.strictObject(Object.fromEntries(Object.entries(shape).filter(([key]) => keep(key))))
  const params = pick((key) => pathKeys.includes(key))
  const rest = pick((key) => !pathKeys.includes(key))
  if (Object.keys(rest.shape).length === 0) return { params }
  // The input's examples, without the values that travel in the path.
  const examples = z.globalRegistry.get(input)?.examples as Array<Record<string, unknown>> | undefined
  const withoutPath = (e: Record<string, unknown>) => Object.fromEntries(Object.entries(e).filter(([k]) => !pathKeys.includes(k)))
  return { params, [where]: examples ? rest.meta({ examples: examples.map(withoutPath) }) : rest }
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** A member's business operations: a guest may use them too, within the free plan (src/auth/guests/). */
export const GUESTS_TOO = Object.freeze({ forGuests: true as const })

/**
 * The routes of a domain's operations. `forGuests`: a guest (an anonymous user, src/auth/guests/)
 * may call every one of them, within the free plan; otherwise the route policy refuses guests.
 */
export function operationRoutes<C extends AnyContractRouter>(
  contract: C,
  handlersOf: (app: FastifyInstance) => Handlers<C>,
  options: { forGuests?: true } = {},
) {
  return async function operations(app: FastifyInstance) {
    const declared = declarations(contract, handlersOf(app)).map((d) => ({ ...d, guests: options.forGuests }))
    for (const operation of declared) addRestRoute(app, operation)

    const rpc = new StandardRPCHandler<RpcContext>(routerOf(declared), {
      // The CSRF rule, when configured, is oRPC's own: a call without `x-csrf-token: orpc` is its
      // 403 CSRF_TOKEN_MISMATCH, after the route policy (a custom header a cross-site form cannot send).
      plugins: [
        new StrictGetMethodPlugin(),
        ...(app.config.rpc.requireCsrfHeader ? [new SimpleCsrfProtectionHandlerPlugin()] : []),
      ],
      interceptors: [captureFailure],
      clientInterceptors: [markCalled],
    })
    for (const operation of declared) addProcedureRoute(app, operation, rpc)
    // BatchLinkPlugin's calls, each run through its own procedure's route (plugins/batches.ts).
    for (const { path } of declared) addBatchRoute(app, `${API_PREFIX}/${path.join('/')}`, path.join('.'))
  }
}

/**
 * Every failure of a call, whoever raised it (the policy never: it ran before; oRPC's decoding and
 * input validation, the strict GET rule, the handler), goes back to Fastify's one error handler.
 */
async function captureFailure<T>(options: StandardHandlerInterceptorOptions<RpcContext> & { next(): Promise<T> }): Promise<T> {
  const { failure } = options.context
  try {
    return await options.next()
  } catch (error) {
    failure.error =
      error instanceof InputError
        ? orpcInputError(error.issues)
        : // Raised before the call began: oRPC's decoder threw on a body that is not its protocol's
          // (null, a meta path through __proto__ or a value that is not there). oRPC answers that
          // 400 itself; passed on raw, it would be taken for a bug of ours and answer 500.
          !failure.called && !(error instanceof ORPCError)
          ? malformedRequest(error)
          : error
    throw error
  }
}

/** Runs once the body is decoded, as the procedure's call begins (a client interceptor). */
function markCalled<T>(options: { context: RpcContext; next(): T }): T {
  options.context.failure.called = true
  return options.next()
}

/** oRPC's own answer to a body its decoder could not take (StandardHandler's, word for word). */
const malformedRequest = (cause: unknown) =>
  new ORPCError('BAD_REQUEST', {
    message: `Malformed request. Ensure the request body is properly formatted and the 'Content-Type' header is set correctly.`,
    cause,
  })

const PROCEDURE_METHODS: HTTPMethods[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']

function addProcedureRoute(app: FastifyInstance, operation: Declared, rpc: StandardRPCHandler<RpcContext>): void {
  const { path } = operation
  const { meta, method } = routeOf(operation)
  const url = `${API_PREFIX}/${path.join('/')}`
  const callDirectly =
    app.rpcFastPath &&
    directCaller({ procedure: operation.procedure, handler: operation.handler, method, csrf: app.config.rpc.requireCsrfHeader })
  app.route({
    // RPCLink sends GET for the procedures declared GET and POST for the rest (or the contract's
    // method); the strict GET rule refuses a GET on any other procedure with 405, nothing changed.
    method: PROCEDURE_METHODS,
    url,
    // A HEAD would reach the handler as a request with a body: never a way to call a procedure.
    exposeHeadRoute: false,
    bodyLimit: meta.bodyLimit,
    config: { policy: meta.policy, procedure: path.join('.'), procedureReads: method === 'GET' },
    schema: { hide: true },
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      if (callDirectly) {
        const input = plainInput(request)
        if (input !== NOT_PLAIN) return callDirectly(input, request, reply)
      }
      const context: RpcContext = { request, reply, failure: {} }
      const query = request.url.indexOf('?')
      const { response } = await rpc.handle(
        {
          method: request.method,
          // The route's own path, not the request line: "/%61pi/v1/..." is this procedure too.
          url: new URL(query === -1 ? url : url + request.url.slice(query), 'http://rpc'),
          headers: request.headers,
          body: () => Promise.resolve(request.body),
          signal: undefined,
        },
        { prefix: API_PREFIX, context },
      )
      if (context.failure.error !== undefined) throw context.failure.error
      if (!response) throw new Error(`The procedure ${path.join('.')} did not match its own route`)
      return reply.code(response.status).send(response.body)
    },
  })
}

function addRestRoute(app: FastifyInstance, operation: Declared): void {
  const { path, procedure, handler } = operation
  const route = routeOf(operation)
  const { method, meta } = route
  const input = procedure['~orpc'].inputSchema as z.ZodType | undefined
  const output = procedure['~orpc'].outputSchema as z.ZodType
  const pathKeys = [...route.path.matchAll(PATH_KEY)].map((m) => m[1]!)
  const where = method === 'GET' ? 'querystring' : 'body'
  const success = route.successStatus ?? 200
  const policy = meta.policy ?? {}
  const errors = {
    ...(input && { 400: ErrorSchema }),
    ...(policy.access !== 'public' && { 401: ErrorSchema }),
    ...(typeof policy.access === 'object' && { 403: ErrorSchema }),
    ...meta.errors,
  }

  /** The request's input as one object, the path's values folded in, as the procedure takes it. */
  const inputOf = (request: FastifyRequest): unknown => {
    // A JSON `null` body is no body, as for a POST that sends none.
    const rest = (where === 'body' ? request.body : request.query) ?? undefined
    if (pathKeys.length === 0) return rest
    if (rest !== undefined && !isPlainObject(rest)) throw validationFailed([{ path: where, message: 'Expected an object' }])
    const params = request.params as Record<string, string>
    const clash = pathKeys.find((key) => rest !== undefined && Object.hasOwn(rest, key))
    if (clash) throw validationFailed([{ path: where, message: `Unrecognized key: "${clash}"` }])
    return { ...rest, ...params }
  }
  /** An issue's place in the request: the path's keys are params, the rest the body or the query. */
  const placed = (issue: InputIssue) => {
    const part = pathKeys.includes(String(issue.path[0])) ? 'params' : where
    return { path: [part, ...issue.path.map(String)].join('.'), message: issue.message }
  }

  app.route({
    method,
    url: API_PREFIX + route.path.replace(PATH_KEY, ':$1'),
    bodyLimit: meta.bodyLimit,
    config: { policy: meta.policy },
    schema: {
      operationId: route.operationId ?? path.at(-1),
      tags: route.tags ? [...route.tags] : undefined,
      summary: route.summary,
      description: route.description,
      ...restParts(input, pathKeys, where),
      response: { [success]: success === 204 ? z.null().describe(route.successDescription ?? 'Done') : output, ...errors },
      'x-rpc-procedure': path.join('.'),
    },
    // The input is validated whole, below, by the schema the procedure validates with; the parts
    // above describe it to the OpenAPI document.
    validatorCompiler: () => () => true,
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      let value: unknown
      if (input) {
        const parsed = input.safeParse(inputOf(request))
        if (!parsed.success) throw validationFailed(parsed.error.issues.map(placed))
        value = parsed.data
      }
      let result: unknown
      try {
        result = await handler(value, request, reply)
      } catch (err) {
        throw err instanceof InputError ? validationFailed(err.issues.map(placed)) : err
      }
      if (meta.download) reply.header('content-disposition', `attachment; filename="${meta.download}"`)
      return success === 204 ? reply.code(204).send() : reply.code(success).send(result)
    },
  })
}
