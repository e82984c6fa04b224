// A route that mails a link or a code answers before it looks the address up: the same work, so the
// same time, for an address with an account and one without (no enumeration by timing). The mail
// is sent after the reply. Email accounts (reset, verification) and mailbox sign-ins (codes, the
// sign-in link) mail this way.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { z } from 'zod'
import type { RoutePolicy } from '../../shared/route-policy.js'

/**
 * The declaration of a route that mails: a POST with its one answer, whatever the address; it fails
 * only on its input (400), its origin (403) or its budgets (429).
 */
export function mailing<const B extends z.ZodType, const A extends z.ZodType>(route: {
  path: string
  summary: string
  policy: RoutePolicy
  body: B
  answer: A
}) {
  const { answer, ...rest } = route
  return { method: 'POST' as const, ...rest, response: { 200: answer }, errors: [400, 403, 429] }
}

/**
 * Its handler: `prepare` reads the request before the answer (what it throws, such as a hostile
 * redirect, is the answer instead, and nothing is mailed) and says what to mail after it.
 */
export function mailsAfterReply<Body, Answer>(
  app: FastifyInstance,
  answer: Answer,
  prepare: (body: Body, request: FastifyRequest) => { what: string; mail: () => Promise<unknown> },
) {
  return async (request: FastifyRequest<{ Body: Body }>): Promise<Answer> => {
    const { what, mail } = prepare(request.body as Body, request)
    app.afterReply(request, what, mail)
    return answer
  }
}
