// Pino options: JSON, one line per request with its id; secrets never reach the log.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { LoggerOptions } from 'pino'

const SENSITIVE_QUERY = /^(token|code|state|password|secret|signature|id_token|access_token)$/i
const MAX_URL = 512

/** The URL with the values of sensitive query parameters replaced. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?')
  const shortened = url.length > MAX_URL ? `${url.slice(0, MAX_URL)}…` : url
  if (q === -1) return shortened
  const params = new URLSearchParams(url.slice(q + 1))
  for (const key of [...params.keys()]) if (SENSITIVE_QUERY.test(key)) params.set(key, '[Redacted]')
  const redacted = `${url.slice(0, q)}?${params.toString()}`
  return redacted.length > MAX_URL ? `${redacted.slice(0, MAX_URL)}…` : redacted
}

export const REDACT_PATHS = [
  'req.headers.cookie',
  'req.headers.authorization',
  'res.headers["set-cookie"]',
  '*.password',
  '*.newPassword',
  '*.currentPassword',
  '*.token',
  '*.secret',
  '*.cookie',
  '*.authorization',
  '*.passwordHash',
  '*.password_hash',
  '*.clientSecret',
  '*.serverKey',
]

export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
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
      res(reply: FastifyReply) {
        return { statusCode: reply.statusCode }
      },
    },
  }
}
