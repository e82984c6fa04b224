// oRPC 1.14's batch protocol (BatchLinkPlugin of @orpc/client, BatchHandlerPlugin of @orpc/server)
// on every procedure route: RPCLink sends the calls of one tick as one request to
// `<first call's procedure>/__batch__` with `x-orpc-batch: streaming|buffered`, a POST whose body is
// [{url, method?, headers?, body?}] (a GET, for calls that are all GET, with it in `?batch=`), and
// reads 207 with each call's {index, status, headers?, body} as it ends: an event stream, or
// (buffered) one JSON array.
//
// Each call is run as the request it would have been alone, through the app's own pipeline
// (app.inject): the route-policy hook of its procedure's route (origin, session, role, budgets),
// the handler (plan limits, audit), the error handler, the request log and metrics. It carries the
// batch's client address and the headers that speak for the client (cookie, origin, forwarded-for,
// CSRF token), which a call cannot replace, so it gets the verdicts the batch's own client would.
// BatchHandlerPlugin itself calls the procedures in-process, past the route policy, and never ends
// an empty batch (Promise.race([])), so the same bytes are written here.
import { Readable } from 'node:stream'
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify'
import { z } from 'zod'
import { AppError, serviceUnavailable } from '../shared/errors.js'
import { rpcErrorBody } from './errors.js'
import { clientKey } from './rate-limit.js'
import type { RegisteredRoute } from './route-policy.js'
import type { RoutePolicy } from '../shared/route-policy.js'

/** Where a procedure's batches go, after its own path (BatchLinkPlugin's default URL). */
export const BATCH_SUFFIX = '/__batch__'
/** oRPC's limit: BatchLinkPlugin splits larger groups, BatchHandlerPlugin refuses them with 413. */
export const MAX_BATCH_SIZE = 10

declare module 'fastify' {
  interface FastifyContextConfig {
    /** On a batch route: true. Its `procedure` is the procedure whose path it extends. */
    batch?: true
  }
}

/**
 * Anyone may send a batch: each call is judged by its own procedure's policy. The global budget is
 * taken by each call, not by the batch that carries them (a batch of n costs n, as n calls alone
 * would), and by a batch refused as a whole (below); the origin rule applies to the batch itself.
 */
export const BATCH_POLICY: RoutePolicy = Object.freeze({
  access: 'public',
  rateLimit: Object.freeze({ global: false }),
  // In support mode each call is judged by its own procedure's route: a batch of reads is a read.
  whileImpersonating: 'allowed',
})

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'])
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// A value Node's parser would have let in: no CR, LF or NUL.
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/

const BatchItem = z.strictObject({
  url: z.string().refine((url) => URL.canParse(url), 'an absolute URL'),
  method: z.string().optional(),
  headers: z
    .record(z.string().regex(HEADER_NAME), z.union([z.string().regex(HEADER_VALUE), z.array(z.string().regex(HEADER_VALUE))]))
    .optional(),
  body: z.unknown().optional(),
})
type BatchItem = z.infer<typeof BatchItem>

/** Headers that speak for the client or the channel: a call has the batch's, and cannot set its own. */
const fromBatchOnly = (name: string) =>
  /^(host|origin|referer|cookie|authorization|proxy-authorization|forwarded|x-real-ip|x-csrf-token)$/.test(name) ||
  name.startsWith('x-forwarded-') ||
  // What the browser says of the request's site: the cross-site rule (origins.ts) reads it.
  name.startsWith('sec-fetch-')
/** Headers of the batch's own message (and HTTP/2's pseudo-headers), which its calls do not inherit. */
const OWN_MESSAGE =
  /^(:.*|content-type|content-length|transfer-encoding|connection|keep-alive|upgrade|expect|te|trailer|x-orpc-batch|x-request-id)$/
/** Headers of a call's answer that belong to the batch's answer (Set-Cookie is moved there). */
const ANSWER_MESSAGE =
  /^(content-type|content-length|transfer-encoding|connection|keep-alive|date|set-cookie|vary|cache-control|x-content-type-options|access-control-.*)$/

/** One call's answer, as the batch response carries it. */
interface Answer {
  index: number
  status: number
  headers?: Record<string, string | string[]>
  body: unknown
}

/** A call refused before it ran, in the RPC envelope as its procedure route would answer. */
const refusedCall = (index: number, error: AppError): Answer => ({
  index,
  status: error.status,
  // A wait is on the call's headers, as its procedure route would send it (Retry-After).
  ...(error.retryAfter !== undefined && { headers: { 'retry-after': String(error.retryAfter) } }),
  body: rpcErrorBody(error),
})

const invalidBatch = (why: string) => new AppError(400, 'BAD_REQUEST', `Invalid batch request: ${why}`)

/** The calls a batch carries: its body, or for a GET the JSON in its last `batch` query parameter. */
function callsOf(request: FastifyRequest): BatchItem[] {
  if (request.headers['x-orpc-batch'] === undefined) throw invalidBatch('the x-orpc-batch header is missing')
  let items: unknown = request.body
  if (request.method === 'GET') {
    const given = new URL(request.url, 'http://batch').searchParams.getAll('batch').at(-1)
    try {
      items = given === undefined ? undefined : JSON.parse(given)
    } catch {
      throw invalidBatch('the batch query parameter is not JSON')
    }
  }
  if (!Array.isArray(items)) throw invalidBatch('expected an array of calls')
  if (items.length === 0) throw invalidBatch('no calls')
  if (items.length > MAX_BATCH_SIZE)
    throw new AppError(413, 'PAYLOAD_TOO_LARGE', `A batch carries at most ${MAX_BATCH_SIZE} calls`, {
      data: { maxSize: MAX_BATCH_SIZE },
    })
  const parsed = z.array(BatchItem).safeParse(items)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!
    throw invalidBatch(`${issue.path.join('.')}: ${issue.message}`)
  }
  return parsed.data
}

/** The URLs of the procedures' own routes (never a batch route), once every route is registered. */
const procedureUrls = new WeakMap<readonly RegisteredRoute[], Set<string>>()
function proceduresOf(app: FastifyInstance): Set<string> {
  let urls = procedureUrls.get(app.registeredRoutes)
  if (!urls) {
    urls = new Set(app.registeredRoutes.filter((r) => r.config?.procedure && !r.config.batch).map((r) => r.url))
    procedureUrls.set(app.registeredRoutes, urls)
  }
  return urls
}

/** The headers of call `index`: the batch's (but its own message's), then the call's own where it may set them. */
function headersOf(batch: FastifyRequest, item: BatchItem, index: number) {
  const headers: Record<string, string | string[] | undefined> = {}
  for (const [name, value] of Object.entries(batch.headers))
    if (value !== undefined && !OWN_MESSAGE.test(name)) headers[name] = value
  for (const [given, value] of Object.entries(item.headers ?? {})) {
    const name = given.toLowerCase()
    if (!fromBatchOnly(name) && !OWN_MESSAGE.test(name)) headers[name] = value
  }
  // The call's log line and answer carry the batch's id and its place in the batch.
  headers['x-request-id'] = `${batch.id.slice(0, 120)}.${index}`
  // inject() would otherwise name a user agent the client never sent.
  if (headers['user-agent'] === undefined) headers['user-agent'] = undefined
  return headers
}

/** The call's answer headers that are its own (Retry-After, its request id), and its Set-Cookie. */
function answerHeaders(headers: Record<string, unknown>) {
  const own: Record<string, string | string[]> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || ANSWER_MESSAGE.test(name)) continue
    own[name] = Array.isArray(value) ? value.map(String) : String(value)
  }
  const cookie = headers['set-cookie']
  const cookies = cookie === undefined ? [] : Array.isArray(cookie) ? cookie.map(String) : [String(cookie)]
  return { own, cookies }
}

interface Call {
  answer: Answer
  cookies: string[]
}

/** Runs call `index` as the request it would have been alone, through the app's whole pipeline. */
async function run(
  app: FastifyInstance,
  batch: FastifyRequest,
  remoteAddress: string,
  item: BatchItem,
  index: number,
): Promise<Call> {
  const refused = (error: AppError): Call => ({ answer: refusedCall(index, error), cookies: [] })
  // A call refused before it runs costs what it would have alone (the global budget, which the
  // batch route does not take), or batches of calls to nowhere would be a flood never counted.
  const refusedBeforeRun = async (error: AppError): Promise<Call> => {
    try {
      await app.rateLimits.global.spend(clientKey(batch.ip))
    } catch (err) {
      if (!(err instanceof AppError)) throw err
      return refused(err)
    }
    return refused(error)
  }
  const method = item.method ?? batch.method
  const url = new URL(item.url)
  if (url.pathname.endsWith(BATCH_SUFFIX))
    return refusedBeforeRun(new AppError(400, 'BAD_REQUEST', 'A batch cannot carry a batch'))
  if (!proceduresOf(app).has(url.pathname)) return refusedBeforeRun(new AppError(404, 'NOT_FOUND', 'No procedure matched'))
  if (!METHODS.has(method))
    return refusedBeforeRun(new AppError(405, 'METHOD_NOT_SUPPORTED', `Method ${method.slice(0, 20)} is not supported`))
  // A GET batch changes nothing: it is not origin-checked as a state-changing request is.
  if (batch.method === 'GET' && method !== 'GET')
    return refusedBeforeRun(new AppError(405, 'METHOD_NOT_SUPPORTED', 'A GET batch carries only GET calls'))

  const headers = headersOf(batch, item, index)
  const hasBody = method !== 'GET' && item.body !== undefined
  let payload: string | undefined
  try {
    payload = hasBody ? JSON.stringify(item.body) : undefined
  } catch {
    // Nested deeper than JSON.stringify goes (the batch's parser took it): refused as a body.
    return refusedBeforeRun(new AppError(400, 'BAD_REQUEST', "The call's body is nested too deeply"))
  }
  if (hasBody) headers['content-type'] = 'application/json'
  let res: Awaited<ReturnType<FastifyInstance['inject']>>
  try {
    res = await app.inject({
      method: method as HTTPMethods,
      url: url.pathname + url.search,
      headers: headers as Record<string, string>,
      remoteAddress,
      ...(payload !== undefined && { payload }),
    })
  } catch {
    // inject() refuses once the app is closing.
    return refused(serviceUnavailable('The service is shutting down'))
  }
  const { own, cookies } = answerHeaders(res.headers)
  let body: unknown
  try {
    body = res.payload === '' ? undefined : JSON.parse(res.payload)
  } catch {
    batch.log.error({ index, status: res.statusCode }, 'a batched call answered something other than JSON')
    return refused(new AppError(500, 'INTERNAL_SERVER_ERROR', 'Something went wrong on our side'))
  }
  return { answer: { index, status: res.statusCode, ...(Object.keys(own).length && { headers: own }), body }, cookies }
}

/** The calls' results as each ends, whatever the order they were sent in. */
async function* inCompletionOrder<T>(promises: Array<Promise<T>>): AsyncGenerator<T> {
  const pending = new Map(promises.map((p, i) => [i, p.then((value) => ({ i, value }))]))
  while (pending.size > 0) {
    const { i, value } = await Promise.race(pending.values())
    pending.delete(i)
    yield value
  }
}

/** One answer as an event of the stream, in the bytes oRPC's event encoder writes. */
const event = (answer: Answer) => `event: message\ndata: ${JSON.stringify(answer)}\n\n`

/** The batch route of the procedure served at `url`. */
export function addBatchRoute(app: FastifyInstance, url: string, procedure: string): void {
  app.route({
    method: ['GET', 'POST'],
    url: url + BATCH_SUFFIX,
    exposeHeadRoute: false,
    config: { policy: BATCH_POLICY, procedure, batch: true },
    schema: { hide: true },
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      let calls: BatchItem[]
      try {
        calls = callsOf(request)
      } catch (err) {
        // Refused as a whole, it costs what one request does.
        await app.rateLimits.global.spend(clientKey(request.ip))
        throw err
      }
      // Each call is judged from the batch's client address; without one (the client has gone),
      // inject() would say 127.0.0.1, an address a proxy rule may trust.
      const remoteAddress = request.socket.remoteAddress
      if (remoteAddress === undefined) throw new AppError(400, 'BAD_REQUEST', 'The connection was closed')

      /** A call's cookies (a cleared session) go on the batch's answer while its headers are not sent. */
      const settle = ({ answer, cookies }: Call): Answer => {
        if (cookies.length === 0) return answer
        if (reply.raw.headersSent) {
          request.log.warn({ index: answer.index }, "a batched call's Set-Cookie came after the stream's headers and was dropped")
        } else {
          for (const cookie of cookies) reply.header('set-cookie', cookie)
        }
        return answer
      }
      const results = inCompletionOrder(calls.map((item, index) => run(app, request, remoteAddress, item, index)))

      if (request.headers['x-orpc-batch'] === 'buffered') {
        const answers: Answer[] = []
        for await (const call of results) answers.push(settle(call))
        return reply.code(207).type('application/json; charset=utf-8').send(JSON.stringify(answers))
      }
      // Streaming: the headers go with the first answer, as BatchHandlerPlugin sends them.
      const first = await results.next()
      const firstAnswer = first.done ? undefined : settle(first.value)
      const stream = async function* () {
        // oRPC's event stream opens with an empty comment.
        yield ': \n\n'
        if (firstAnswer) yield event(firstAnswer)
        for await (const call of results) yield event(settle(call))
      }
      return reply.code(207).type('text/event-stream').send(Readable.from(stream()))
    },
  })
}
