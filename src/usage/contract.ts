// getPlanAndUsage (procedure /api/v1/getPlanAndUsage, the specification's path; REST /api/v1/plan)
// and usage.increment: the signed-in user's plan and usage counters.
import { NoInput, operation } from '../shared/operation.js'
import { IncrementInput, PlanAndUsageSchema, PlanLimitErrorSchema, UsageResultSchema } from './schemas.js'

export const usageContract = operation.tag('usage').router({
  getPlanAndUsage: operation
    .route({
      method: 'GET',
      path: '/plan',
      summary: 'The plan in force and every usage counter of the current period against its limit',
    })
    .input(NoInput)
    .output(PlanAndUsageSchema),

  usage: {
    increment: operation
      .route({
        method: 'POST',
        path: '/usage/{metric}/increment',
        operationId: 'incrementUsage',
        summary: 'Count usage of a metric against the plan limit; at the limit nothing is counted (402)',
        description:
          'An unknown metric is a 400 VALIDATION_ERROR (the metric is an enum of the path). 402 ' +
          'PLAN_LIMIT_REACHED carries data {metric, limit, used, resetsAt}.',
      })
      .meta({ errors: { 402: PlanLimitErrorSchema } })
      .input(IncrementInput)
      .output(UsageResultSchema),
  },
})
