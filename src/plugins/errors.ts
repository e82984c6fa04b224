// One error shape for every failure: { code, status, message, data?, defined: false }. A 5xx never carries a
// stack trace, SQL, a driver message or a file path; the details go to the log with the request id.
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import { ORPCError } from '@orpc/client'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AppError, type ErrorCode } from '../shared/errors.js'

declare module 'fastify' {
  interface FastifyReply {
    /** The code of the error this reply answers, for the request's log line; null on success. */
    errorCode: string | null
  }
}

export interface ErrorBody {
  code: ErrorCode
  status: number
  message: string
  data?: Record<string, unknown>
  /** Always false: it makes the body oRPC 1.14's error JSON, read exactly by the web client's OpenAPILink. */
  defined: false
}

// Connection-level failures of node-postgres / PGlite: the database is unreachable, not a bug.
const DB_DOWN_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '53300',
])
const DB_DOWN_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|database did not answer|PGlite is closed|Connection ended|Query read timeout/i

function isDatabaseDown(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false
  const e = err as { code?: unknown; message?: unknown; errors?: unknown[] }
  if (typeof e.code === 'string' && DB_DOWN_CODES.has(e.code)) return true
  if (typeof e.message === 'string' && DB_DOWN_MESSAGE.test(e.message)) return true
  return Array.isArray(e.errors) && e.errors.some(isDatabaseDown) // AggregateError from dual-stack connect
}

// SQLSTATE class 22 (data exception: a NUL byte, invalid text for a type, a number out of range)
// and 54001 (a JSON value nested too deep) come from what the client sent, not from a bug.
function isRejectedInput(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^(22[0-9A-Z]{3}|54001)$/.test(code)
}

/** Fastify's router errors (malformed URL, over-long path parameter) in the one shape. */
export function frameworkError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  // No route matched, so no hook ran: the headers every response carries are set here.
  reply.header('x-request-id', request.id).headers(ALWAYS)
  const message = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A path parameter is too long' : 'The URL is malformed'
  return sendError(reply, new AppError(400, 'BAD_REQUEST', message))
}

/** Headers every answer carries; set here for the answers no route hook sees. */
const ALWAYS = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' }

/**
 * Node's own answers to a request it could not parse (a bad header line, an unknown method, headers
 * over the size limit), written on the socket in the one error shape, with the headers every answer
 * carries. Fastify's clientErrorHandler option.
 */
export function clientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
  const message =
    status === 431
      ? 'Request headers are too large'
      : status === 408
        ? 'The request took too long'
        : 'The request could not be read'
  const body = JSON.stringify({ code: 'BAD_REQUEST', status, message, defined: false } satisfies ErrorBody)
  const headers = {
    ...ALWAYS,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  }
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')}\r\n${body}`,
  )
}

/** A REST request that failed its schema; each issue's path starts with the request part (body.name). */
export function validationFailed(issues: Array<{ path: string; message: string }>): AppError {
  const first = issues[0]
  const message = first ? `Invalid ${first.path || 'request'}: ${first.message}` : 'Invalid request'
  return new AppError(400, 'VALIDATION_ERROR', message, { data: { issues } })
}

function fromFastifyError(err: FastifyError): AppError | undefined {
  if (err.validation) {
    return validationFailed(
      err.validation.map((v) => {
        const issuePath = (v.params as { issue?: { path?: PropertyKey[] } } | undefined)?.issue?.path
        const path = issuePath
          ? issuePath.map(String).join('.')
          : String(v.instancePath ?? '')
              .replace(/^\//, '')
              .replaceAll('/', '.')
        return { path: [err.validationContext, path].filter(Boolean).join('.'), message: v.message ?? 'Invalid value' }
      }),
    )
  }
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError(413, 'PAYLOAD_TOO_LARGE', 'Request body is too large')
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Request body must be application/json')
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError(400, 'BAD_REQUEST', 'Request body is empty but Content-Type is application/json')
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError(400, 'BAD_REQUEST', 'Request body is not valid JSON')
  }
  if (err instanceof SyntaxError || err.name === 'SyntaxError') {
    return new AppError(400, 'BAD_REQUEST', 'Request body is not valid JSON')
  }
  if (err.statusCode === 429) return new AppError(429, 'RATE_LIMITED', 'Too many requests, slow down')
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
    if (err.statusCode === 404) return new AppError(404, 'NOT_FOUND', 'Not found')
    if (err.statusCode === 413) return new AppError(413, 'PAYLOAD_TOO_LARGE', 'Request body is too large')
    if (err.statusCode === 415) return new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Unsupported media type')
    return new AppError(400, 'BAD_REQUEST', 'The request could not be read')
  }
  return undefined
}

/** An error in the RPC protocol's envelope, as @orpc/server's RPCHandler answers one: {json: error}. */
export function rpcErrorBody({ code, status, message, data }: AppError) {
  return { json: { defined: false, code, status, message, ...(data && { data }) } }
}

/**
 * The error body: the one shape, or on an oRPC procedure route (plugins/operations.ts) that shape
 * inside the RPC protocol's envelope, as @orpc/server's RPCHandler answers an error: {json: error}.
 */
function sendError(reply: FastifyReply, error: AppError, rpc = false): FastifyReply {
  if (error.retryAfter !== undefined) reply.header('retry-after', String(error.retryAfter))
  const { code, status, message, data } = error
  reply.errorCode = code
  const body = rpc ? rpcErrorBody(error) : ({ code, status, message, ...(data && { data }), defined: false } satisfies ErrorBody)
  // A serializer-free send: the route's response schema must not apply to an error body.
  return reply.code(error.status).type('application/json; charset=utf-8').serializer(JSON.stringify).send(body)
}

/** True on the route of an oRPC procedure, whose answers travel in the RPC protocol's envelope. */
const isProcedure = (request: FastifyRequest): boolean => !request.is404 && request.routeOptions.config.procedure !== undefined

export default fp(
  async function errorHandling(app: FastifyInstance) {
    app.decorateReply('errorCode', null)
    app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      let error: AppError
      if (err instanceof AppError) {
        error = err
      } else if (err instanceof ORPCError && err.status < 500) {
        // oRPC's own refusals on the RPC surface: input that fails its schema, a GET on a procedure
        // that changes state, a body that is not its protocol's.
        error = new AppError(err.status, err.code as ErrorCode, err.message, { data: err.data })
      } else if (isRejectedInput(err)) {
        request.log.warn({ err: { message: err.message, code: err.code } }, 'input refused by the database')
        error = new AppError(400, 'BAD_REQUEST', 'The request contains a value that cannot be stored')
      } else if (isDatabaseDown(err)) {
        request.log.warn({ err: { message: err.message, code: err.code } }, 'database unavailable')
        error = new AppError(503, 'SERVICE_UNAVAILABLE', 'The service is temporarily unavailable', { retryAfter: 5 })
      } else {
        const mapped = fromFastifyError(err)
        if (mapped) {
          error = mapped
        } else {
          request.log.error({ err }, 'unhandled error')
          error = new AppError(500, 'INTERNAL_SERVER_ERROR', 'Something went wrong on our side')
        }
      }
      if (error.status >= 500 && error.status !== 503) request.log.error({ code: error.code }, error.message)
      return sendError(reply, error, isProcedure(request))
    })

    // An `Expect` other than 100-continue: Node would answer 417 by itself, without our headers.
    app.server.on('checkExpectation', (_request, response) => {
      const body = JSON.stringify({
        code: 'BAD_REQUEST',
        status: 417,
        message: 'Expectation not supported',
        defined: false,
      } satisfies ErrorBody)
      response.writeHead(417, {
        ...ALWAYS,
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(body),
      })
      response.end(body)
    })

    app.setNotFoundHandler((request, reply) =>
      sendError(reply, new AppError(404, 'NOT_FOUND', `Route ${request.method} ${request.url.split('?')[0]} not found`)),
    )
  },
  { name: 'errors' },
)
