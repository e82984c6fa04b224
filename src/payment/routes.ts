// /api/v1/payments: checkout, verify and list (contract.ts), the gateways' webhook (public, signed) and
// the sandbox gateway's confirm page (public, development only).
import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { currentUser } from '../auth/session/guard.js'
import { ErrorSchema } from '../shared/errors.js'
import { PUBLIC } from '../shared/route-policy.js'
import { sendPage } from '../shared/html-page.js'
import { contextOf } from '../shared/context.js'
import { AppError } from '../shared/errors.js'
import { resolveRedirect } from '../shared/redirect.js'
import { renderSandboxPage } from './sandbox.js'
import { operationRoutes } from '../plugins/operations.js'
import { paymentContract } from './contract.js'
import { PaymentIdParams, ProviderParams } from './schemas.js'
import {
  buildGateways,
  createCheckout,
  listPayments,
  processWebhook,
  sandboxCheckout,
  verifyPayment,
  type PaymentDeps,
} from './service.js'

const tags = ['payments']
// Gateways' event payloads (a Stripe event with its expanded objects) can exceed the 64 KiB default.
const WEBHOOK_BODY_LIMIT = 512 * 1024

export default async function paymentRoutes(fastify: FastifyInstance) {
  const deps: PaymentDeps = {
    db: fastify.db,
    clock: fastify.clock,
    gateways: buildGateways(fastify.config, fastify.clock),
    webOrigin: fastify.config.auth.webOrigin,
  }

  await fastify.register(
    operationRoutes(paymentContract, (app) => ({
      payment: {
        createCheckout: (input, request) =>
          createCheckout(deps, contextOf(request), currentUser(request), {
            ...input,
            // Only the resolved URL is stored and handed to the gateway.
            returnUrl: resolveRedirect(input.returnUrl, app.redirectRules, 'returnUrl'),
          }),
        verifyPayment: ({ paymentId }, request) => verifyPayment(deps, contextOf(request), paymentId),
        listPayments: (input, request) => listPayments(deps, contextOf(request), input),
      },
    })),
  )

  // The webhook's signature covers the exact bytes: this scope keeps the body as a raw Buffer.
  await fastify.register(async function webhookRoutes(scope) {
    scope.removeContentTypeParser('application/json')
    scope.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_request, body, done) =>
      done(null, body),
    )
    const app = scope.withTypeProvider<ZodTypeProvider>()

    app.post(
      '/api/v1/payments/webhook/:provider',
      {
        bodyLimit: WEBHOOK_BODY_LIMIT,
        // The gateway authenticates by its signature over the body, and sends its own Origin or none.
        config: { policy: { access: 'public', checkOrigin: false } },
        schema: {
          operationId: 'processWebhook',
          tags,
          summary: "Gateway notifications (public; authenticated by the gateway's signature over the raw body)",
          params: ProviderParams,
          response: { 200: z.object({ received: z.literal(true) }), 400: ErrorSchema, 404: ErrorSchema },
        },
      },
      async (request) => {
        const raw = request.body
        if (!Buffer.isBuffer(raw) || raw.length === 0) throw new AppError(400, 'BAD_REQUEST', 'Webhook body is missing')
        await processWebhook(deps, contextOf(request), request.params.provider, raw, request.headers)
        return { received: true as const }
      },
    )
  })

  if (deps.gateways.byProvider.has('sandbox')) {
    const app = fastify.withTypeProvider<ZodTypeProvider>()
    app.get(
      '/api/v1/payments/sandbox/:paymentId',
      {
        config: { policy: PUBLIC },
        schema: {
          operationId: 'sandboxCheckoutPage',
          tags,
          summary: "The sandbox gateway's confirm page (HTML; development only)",
          params: PaymentIdParams,
          response: { 200: z.string().describe('text/html'), 404: ErrorSchema },
        },
      },
      async (request, reply) => {
        const page = renderSandboxPage(await sandboxCheckout(deps, contextOf(request), request.params.paymentId))
        return sendPage(reply, page, 200)
      },
    )
  }
}
