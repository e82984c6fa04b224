// Compatibility results and their paid deep insights: procedures compatibility.<name>, REST under
// /api/v1/compatibility/results.
import { failsWith, operation } from '../shared/operation.js'
import { IdParams } from '../shared/validation.js'
import {
  CreateResultBody,
  ListResultsQuery,
  ResultPageSchema,
  ResultSchema,
  SaveDeepInsightsInput,
  UnlockInput,
} from './schemas.js'

export const compatibilityContract = operation.tag('compatibility').router({
  compatibility: {
    createResult: operation
      .route({
        method: 'POST',
        path: '/compatibility/results',
        successStatus: 201,
        summary: 'Store a compatibility result and its free lite summary (counts compatibilityChecks)',
      })
      .meta({ errors: failsWith(402, 404, 413) })
      .input(CreateResultBody)
      .output(ResultSchema),

    getResult: operation
      .route({
        method: 'GET',
        path: '/compatibility/results/{id}',
        summary: 'One result of the user (admins and owners: any result, audited)',
      })
      .meta({ errors: failsWith(404) })
      .input(IdParams)
      .output(ResultSchema),

    listResults: operation
      .route({
        method: 'GET',
        path: '/compatibility/results',
        summary: "The user's results, newest first, by cursor (without deep insights)",
      })
      .input(ListResultsQuery)
      .output(ResultPageSchema),

    unlockDeepInsights: operation
      .route({
        method: 'POST',
        path: '/compatibility/results/{id}/unlock',
        summary: 'Unlock deep insights with a deep_insights purchase or the premium_plus plan (idempotent)',
      })
      .meta({ errors: failsWith(402, 404) })
      .input(UnlockInput)
      .output(ResultSchema),

    saveDeepInsights: operation
      .route({
        method: 'PUT',
        path: '/compatibility/results/{id}/deep-insights',
        summary: 'Store the deep insights the client produced for an unlocked result',
      })
      // Deep insights may be up to 128 KiB of JSON, above the default body limit.
      .meta({ errors: failsWith(402, 404, 413), bodyLimit: 200 * 1024 })
      .input(SaveDeepInsightsInput)
      .output(ResultSchema),
  },
})
