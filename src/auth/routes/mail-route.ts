// A route that mails a link or a code answers before it looks the address up: the same work, so the
// same time, for an address with an account and one without (no enumeration by timing). The mail
// is sent after the reply. Email accounts (reset, verification) and mailbox sign-ins (codes, the
// sign-in link) mail this way.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import type { z } from 'zod'
import { ErrorSchema } from '../../shared/errors.js'
import type { RoutePolicy } from '../../shared/route-policy.js'

export interface MailRoute<Body> {
  policy: RoutePolicy
  operationId: string
  tags: string[]
  summary: string
  body: z.ZodType<Body>
  /** The one answer, whatever the address: its schema, and the answer itself. */
  answer: z.ZodType
  answered: () => unknown
}

/**
 * Registers POST `url`. `prepare` reads the request before the answer (what it throws, such as a
 * hostile redirect, is the answer instead, and nothing is mailed) and says what to mail after it.
 */
export function mailRoute<Body extends { email: string }>(
  fastify: FastifyInstance,
  url: string,
  route: MailRoute<Body>,
  prepare: (body: Body, request: FastifyRequest) => { what: string; mail: () => Promise<unknown> },
): void {
  fastify.withTypeProvider<ZodTypeProvider>().post(
    url,
    {
      config: { policy: route.policy },
      schema: {
        operationId: route.operationId,
        tags: route.tags,
        summary: route.summary,
        body: route.body,
        response: { 200: route.answer, 400: ErrorSchema, 403: ErrorSchema, 429: ErrorSchema },
      },
    },
    async (request) => {
      const { what, mail } = prepare(request.body as Body, request)
      fastify.afterReply(request, what, mail)
      return route.answered()
    },
  )
}
