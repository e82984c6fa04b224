import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { VERSION } from '../version.js'

const HealthBody = z.object({
  status: z.enum(['ok', 'unavailable']),
  database: z.enum(['ok', 'down']),
  version: z.string(),
  uptimeSeconds: z.number(),
})

export default async function healthRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()

  app.get(
    '/api/health',
    {
      schema: {
        operationId: 'getHealth',
        tags: ['health'],
        summary: 'Readiness: the process runs and the database answers within 1 s',
        response: { 200: HealthBody, 503: HealthBody },
      },
    },
    async (_request, reply) => {
      const uptimeSeconds = Math.round(process.uptime())
      try {
        await app.database.ping(1000)
        return { status: 'ok' as const, database: 'ok' as const, version: VERSION, uptimeSeconds }
      } catch {
        reply.code(503).header('retry-after', '5')
        return { status: 'unavailable' as const, database: 'down' as const, version: VERSION, uptimeSeconds }
      }
    },
  )

  app.get(
    '/api/health/live',
    {
      schema: {
        operationId: 'getLiveness',
        tags: ['health'],
        summary: 'Liveness: the process runs (no database call)',
        response: { 200: z.object({ status: z.literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  )
}
