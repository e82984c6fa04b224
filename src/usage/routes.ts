// /api/v1/getPlanAndUsage and /api/v1/usage/{metric}/increment, for the signed-in user only.
import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { currentUser } from '../auth/guard.js'
import { ErrorSchema } from '../shared/errors.js'
import { contextOf } from '../shared/context.js'
import {
  IncrementBody,
  IncrementParams,
  PlanAndUsageSchema,
  PlanLimitErrorSchema,
  toPlanAndUsageJson,
  toUsageResultJson,
  UsageResultSchema,
} from './schemas.js'
import { CountWriter } from './count-writer.js'
import { getPlanAndUsage, incrementUsage, type UsageDeps } from './service.js'

const tags = ['usage']

export default async function usageRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()
  const deps: UsageDeps = { db: app.db, clock: app.clock, counts: new CountWriter(app.db) }

  app.get(
    '/api/v1/getPlanAndUsage',
    {
      schema: {
        operationId: 'getPlanAndUsage',
        tags,
        summary: 'The plan in force and every usage counter of the current period against its limit',
        response: { 200: PlanAndUsageSchema, 401: ErrorSchema },
      },
    },
    async (request) => toPlanAndUsageJson(await getPlanAndUsage(deps, contextOf(request), currentUser(request))),
  )

  app.post(
    '/api/v1/usage/:metric/increment',
    {
      schema: {
        operationId: 'incrementUsage',
        tags,
        summary: 'Count usage of a metric against the plan limit; at the limit nothing is counted (402)',
        description:
          'An unknown metric is a 400 VALIDATION_ERROR (the metric is an enum of the path). 402 ' +
          'PLAN_LIMIT_REACHED carries data {metric, limit, used, resetsAt}.',
        params: IncrementParams,
        body: IncrementBody,
        response: {
          200: UsageResultSchema,
          400: ErrorSchema,
          401: ErrorSchema,
          402: PlanLimitErrorSchema,
        },
      },
    },
    async (request) => {
      const amount = request.body?.amount ?? 1
      return toUsageResultJson(
        await incrementUsage(deps, contextOf(request), currentUser(request), request.params.metric, amount),
      )
    },
  )
}
