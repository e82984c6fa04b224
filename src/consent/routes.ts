// /api/v1/consent and the personal-data routes /api/v1/me/export and DELETE /api/v1/me.
import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { currentUser } from '../auth/guard.js'
import { ErrorSchema } from '../auth/schemas.js'
import { requestMeta } from '../auth/email/service.js'
import { deleteMyAccount, EXPORT_SECTION_KEYS, exportMyData } from './personal-data.js'
import { ConsentInput, ConsentRecordSchema, ConsentsSchema } from './schemas.js'
import { getConsents, recordConsents } from './service.js'

const errors = { 400: ErrorSchema, 401: ErrorSchema }
const PersonalDataSchema = z
  .object({
    exportedAt: z.string(),
    profile: z.record(z.string(), z.unknown()),
    ...(Object.fromEntries(EXPORT_SECTION_KEYS.map((key) => [key, z.array(z.record(z.string(), z.unknown()))])) as Record<
      (typeof EXPORT_SECTION_KEYS)[number],
      z.ZodArray<z.ZodRecord<z.ZodString, z.ZodUnknown>>
    >),
  })
  .describe('Sessions carry public ids only; no token, hash or secret appears anywhere')
  .meta({ id: 'PersonalData' })

export default async function consentRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()

  app.post(
    '/api/v1/consent',
    {
      schema: {
        operationId: 'recordConsent', tags: ['consent'], summary: 'Record a consent decision (append-only)',
        body: ConsentInput, response: { 201: ConsentRecordSchema, ...errors },
      },
    },
    async (request, reply) => {
      const records = await recordConsents(app.db, currentUser(request).id, [request.body], requestMeta(request))
      return reply.code(201).send(records[0]!)
    },
  )

  app.get(
    '/api/v1/consent',
    {
      schema: {
        operationId: 'getConsents', tags: ['consent'], summary: 'Current consent per type and the full history',
        response: { 200: ConsentsSchema, 401: ErrorSchema },
      },
    },
    async (request) => getConsents(app.db, currentUser(request).id),
  )

  app.get(
    '/api/v1/me/export',
    {
      schema: {
        operationId: 'exportMyData', tags: ['personal data'],
        summary: 'Every record held about the current user, as one JSON document (no secrets, no hashes)',
        response: {
          200: PersonalDataSchema,
          401: ErrorSchema,
        },
      },
    },
    async (request, reply) => {
      reply.header('content-disposition', 'attachment; filename="personal-data.json"')
      return exportMyData(app, currentUser(request), requestMeta(request))
    },
  )

  app.delete(
    '/api/v1/me',
    {
      config: { policy: { reverifiesPassword: true } },
      schema: {
        operationId: 'deleteMyAccount', tags: ['personal data'],
        summary: 'Delete the account: the password again, or a sign-in in the last 10 minutes for accounts without one',
        body: z.strictObject({ password: z.string().min(1).max(1024).optional() }).nullish(),
        response: { 204: z.null(), 403: ErrorSchema, ...errors },
      },
    },
    async (request, reply) => {
      await deleteMyAccount(app, currentUser(request), request.session!, request.body?.password, requestMeta(request))
      app.sessionCookie.clear(reply)
      return reply.code(204).send(null)
    },
  )
}
