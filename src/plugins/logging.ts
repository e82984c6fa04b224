// Pino options: one line per request with its id; secrets never reach the log. JSON, except in
// development on a terminal, where pino-pretty makes the lines readable.
import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify'
import type { Bindings, ChildLoggerOptions, Logger, LoggerOptions } from 'pino'

const SENSITIVE_QUERY =
  /^(token|code|state|password|secret|signature|id_token|access_token|refresh_token|session_token|api_key|key)$/i
const MAX_URL = 512
// better-auth's reset link carries its token in the path: /api/auth/reset-password/<token>.
const TOKEN_IN_PATH = /^([^?]*\/reset-password\/)[^/?]+/i

/**
 * The path with a token in it redacted. Judged on the decoded path, as the router reads it: it
 * routes "/api/auth/%72eset-password/<token>" to the same reset link, whose token must not be logged
 * either. Such a path is then logged decoded.
 */
function redactPath(url: string): string {
  if (TOKEN_IN_PATH.test(url)) return url.replace(TOKEN_IN_PATH, '$1[Redacted]')
  const q = url.indexOf('?')
  const path = q === -1 ? url : url.slice(0, q)
  let decoded: string
  try {
    // A "?" it decodes to stays escaped: the query starts where it did.
    decoded = decodeURIComponent(path).replaceAll('?', '%3F')
  } catch {
    return url
  }
  return TOKEN_IN_PATH.test(decoded) ? decoded.replace(TOKEN_IN_PATH, '$1[Redacted]') + url.slice(path.length) : url
}

/** The URL with the values of sensitive query parameters (and a token in the path) replaced. */
export function redactUrl(original: string): string {
  const url = redactPath(original)
  const q = url.indexOf('?')
  const shortened = url.length > MAX_URL ? `${url.slice(0, MAX_URL)}…` : url
  if (q === -1) return shortened
  // Pair by pair on the raw text, so the rest of the URL is logged exactly as it came.
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const rawKey = pair.split('=', 1)[0]!
      let key = rawKey
      try {
        key = decodeURIComponent(rawKey.replaceAll('+', ' '))
      } catch {
        // a malformed escape: judge the raw key
      }
      return SENSITIVE_QUERY.test(key) ? `${rawKey}=[Redacted]` : pair
    })
    .join('&')
  const redacted = `${url.slice(0, q)}?${query}`
  return redacted.length > MAX_URL ? `${redacted.slice(0, MAX_URL)}…` : redacted
}

// Keys whose values never reach the log, at the top level of a log object and one level down
// (pino's wildcards match exactly one level, so both are listed).
const SENSITIVE_KEYS = [
  'password',
  'newPassword',
  'currentPassword',
  'token',
  'secret',
  'cookie',
  'authorization',
  'passwordHash',
  'password_hash',
  'clientSecret',
  'serverKey',
  'secretKey',
  'webhookSecret',
]

const REDACT_PATHS = [
  'req.headers.cookie',
  'req.headers.authorization',
  'res.headers["set-cookie"]',
  'headers.cookie',
  'headers.authorization',
  '*.headers.cookie',
  '*.headers.authorization',
  ...SENSITIVE_KEYS,
  ...SENSITIVE_KEYS.map((key) => `*.${key}`),
]

export function loggerOptions(level: string, options: { pretty?: boolean } = {}): LoggerOptions {
  return {
    level,
    // A worker thread formats the lines; redaction has already happened by then.
    ...(options.pretty
      ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } }
      : {}),
    redact: { paths: REDACT_PATHS, censor: '[Redacted]' },
    serializers: {
      // An allow-list: only these request fields are logged, never headers wholesale.
      req(req: FastifyRequest) {
        return {
          method: req.method,
          url: redactUrl(req.url),
          remoteAddress: req.ip,
          userAgent: req.headers['user-agent'],
        }
      },
      // An error's code beside its status: a 403 in the log says whether it was the origin, a role or a ban.
      res(reply: FastifyReply) {
        return reply.errorCode ? { statusCode: reply.statusCode, code: reply.errorCode } : { statusCode: reply.statusCode }
      },
    },
  }
}

/** Whether a request's logger writes at `level`: pino's own check, which our request logger keeps too. */
const enabled = (log: FastifyBaseLogger, level: string): boolean => (log as unknown as Logger).isLevelEnabled(level)

/** Told of every answered request, after its response went out. */
export type AnswerObserver = (request: FastifyRequest, reply: FastifyReply) => void

/**
 * One line per request at info (docs/operations.md, "Logs"), written when it is answered: id, method, URL, status
 * and time. Fastify's default wrote two, the first without the status and the second without the
 * method or URL. The arrival is logged at debug only, for a request that never gets an answer.
 *
 * Fastify calls `requestCompleted` for every response, hooks or not, so whatever else must see
 * every answer (the request metrics) observes it here rather than through an onResponse hook,
 * which would cost a hook run on every request.
 */
export class RequestLog extends LogController {
  private readonly observers: AnswerObserver[] = []

  onAnswered(observer: AnswerObserver): void {
    this.observers.push(observer)
  }

  override incomingRequest(request: FastifyRequest): void {
    if (enabled(request.log, 'debug')) request.log.debug({ req: request }, 'incoming request')
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    for (const observe of this.observers) {
      try {
        observe(request, reply)
      } catch (err) {
        // Fastify calls this from the response's 'finish' event: a throw would end the process.
        reply.log.error({ err }, 'observing an answered request failed')
      }
    }
    // The line is built only when it will be written (LOG_LEVEL=warn skips it on every request).
    if (error) reply.log.error({ req: request, res: reply, responseTime: reply.elapsedTime, err: error }, 'request errored')
    else if (enabled(reply.log, 'info'))
      reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed')
  }
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const
type Level = (typeof LEVELS)[number]
type LevelMethod = (...args: unknown[]) => void

/**
 * A request's logger that becomes a pino child (with the request id) only when something is
 * logged at an enabled level. Most requests log nothing below `info`, and building a child, with
 * its redaction of the bindings, cost more than the rest of a liveness probe's logging.
 */
class RequestLogger {
  private child_: FastifyBaseLogger | undefined

  // fatal() to trace(): one method a level, each writing at its level, defined once on the prototype.
  declare fatal: LevelMethod
  declare error: LevelMethod
  declare warn: LevelMethod
  declare info: LevelMethod
  declare debug: LevelMethod
  declare trace: LevelMethod

  static {
    for (const level of LEVELS) {
      RequestLogger.prototype[level] = function (this: RequestLogger, ...args: unknown[]) {
        this.write(level, args)
      }
    }
  }

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private real(): FastifyBaseLogger {
    this.child_ ??= this.parent.child(this.bindings, this.options)
    return this.child_
  }

  private write(level: Level, args: unknown[]): void {
    if (this.isLevelEnabled(level)) (this.real()[level] as (...a: unknown[]) => void)(...args)
  }

  isLevelEnabled(level: string): boolean {
    return this.child_ ? enabled(this.child_, level) : this.parent.isLevelEnabled(level)
  }

  get level(): string {
    return this.child_?.level ?? this.parent.level
  }

  set level(level: string) {
    this.real().level = level
  }

  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real().child(bindings, options)
  }
}

/** Fastify's `childLoggerFactory`: a route with its own log level gets a real child at once. */
export function requestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  const parent = logger as Logger
  if (options.level) return parent.child(bindings, options)
  return new RequestLogger(parent, bindings, options) as unknown as FastifyBaseLogger
}
