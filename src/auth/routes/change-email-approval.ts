// The approval of a change of address by the account's current address: GET shows a page (a mail
// scanner that opens the link approves nothing), POST (its button) approves. No session: the
// mail is read wherever its holder reads it. Both are SIGN_IN_PER_IP, like every link page.
import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { contextOf } from '../../shared/context.js'
import { ErrorSchema } from '../../shared/errors.js'
import { SIGN_IN_PER_IP } from '../../shared/route-policy.js'
import { APPROVE_ADDRESS_CHANGE_PATH } from '../links/emailed-link.js'
import { linkPageRoute } from './link-page.js'
import { EmailedToken, Status } from '../core/schemas.js'
import { renderApprovalPage, renderDeadApprovalPage } from '../account/approval-page.js'
import { type AccountDeps, approveWithLink, pendingApproval } from '../account/service.js'

const tags = ['auth']

export function approvalRoutes(fastify: FastifyInstance, deps: AccountDeps): void {
  linkPageRoute(
    fastify,
    APPROVE_ADDRESS_CHANGE_PATH,
    {
      operationId: 'changeEmailApprovalPage',
      tags,
      summary: `The current address's approval link of a change of address: an HTML page naming the new address; only its button (POST ${APPROVE_ADDRESS_CHANGE_PATH}) approves`,
    },
    { find: (token) => pendingApproval(deps, token), live: renderApprovalPage, dead: renderDeadApprovalPage },
  )

  fastify.withTypeProvider<ZodTypeProvider>().post(
    APPROVE_ADDRESS_CHANGE_PATH,
    {
      config: { policy: SIGN_IN_PER_IP },
      schema: {
        operationId: 'approveChangeEmail',
        tags,
        summary:
          'Approve a change of address from the current address (its link, single-use, 24 h): the new address is then mailed its link; answers the same whether that address is taken or not',
        body: z.strictObject({ token: EmailedToken }),
        response: { 200: Status, 400: ErrorSchema },
      },
    },
    async (request) => {
      await approveWithLink(deps, contextOf(request), request.body.token)
      return { status: true as const }
    },
  )
}
