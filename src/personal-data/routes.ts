// /api/v1/me/export and DELETE /api/v1/me: the signed-in user's personal data, and erasure.
import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { currentUser } from '../auth/guard.js'
import { ErrorSchema } from '../shared/errors.js'
import { contextOf } from '../shared/context.js'
import { REVERIFIES_PASSWORD } from '../shared/route-policy.js'
import { DeleteAccountBody, PersonalDataSchema, toPersonalDataJson } from './schemas.js'
import { deleteMyAccount, exportMyData, type PersonalDataDeps } from './service.js'

const tags = ['personal data']

export default async function personalDataRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()
  const deps: PersonalDataDeps = { db: app.db, clock: app.clock, hasher: app.hasher }

  app.get(
    '/api/v1/me/export',
    {
      schema: {
        operationId: 'exportMyData',
        tags,
        summary: 'Every record held about the current user, as one JSON document (no secrets, no hashes)',
        response: { 200: PersonalDataSchema, 401: ErrorSchema },
      },
    },
    async (request, reply) => {
      reply.header('content-disposition', 'attachment; filename="personal-data.json"')
      return toPersonalDataJson(await exportMyData(deps, contextOf(request), currentUser(request)))
    },
  )

  app.delete(
    '/api/v1/me',
    {
      config: { policy: REVERIFIES_PASSWORD },
      schema: {
        operationId: 'deleteMyAccount',
        tags,
        summary: 'Delete the account: the password again, or a sign-in in the last 10 minutes for accounts without one',
        body: DeleteAccountBody,
        response: { 204: z.null(), 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema },
      },
    },
    async (request, reply) => {
      await deleteMyAccount(deps, contextOf(request), currentUser(request), request.session!, request.body?.password)
      app.sessionCookie.clear(reply)
      return reply.code(204).send(null)
    },
  )
}
