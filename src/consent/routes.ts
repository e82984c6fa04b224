// /api/v1/consent: a signed-in user's consent decisions.
import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { ErrorSchema } from '../shared/errors.js'
import { contextOf } from '../shared/context.js'
import { ConsentInput, ConsentRecordSchema, ConsentsSchema, toConsentRecordJson, toConsentsJson } from './schemas.js'
import { type ConsentDeps, getConsents, giveConsent } from './service.js'

const errors = { 400: ErrorSchema, 401: ErrorSchema }

export default async function consentRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()
  const deps: ConsentDeps = { db: app.db }

  app.post(
    '/api/v1/consent',
    {
      schema: {
        operationId: 'recordConsent',
        tags: ['consent'],
        summary: 'Record a consent decision (append-only)',
        body: ConsentInput,
        response: { 201: ConsentRecordSchema, ...errors },
      },
    },
    async (request, reply) => {
      const record = await giveConsent(deps, contextOf(request), request.body)
      return reply.code(201).send(toConsentRecordJson(record))
    },
  )

  app.get(
    '/api/v1/consent',
    {
      schema: {
        operationId: 'getConsents',
        tags: ['consent'],
        summary: 'Current consent per type and the full history',
        response: { 200: ConsentsSchema, 401: ErrorSchema },
      },
    },
    async (request) => toConsentsJson(await getConsents(deps, contextOf(request))),
  )
}
