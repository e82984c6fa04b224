// Compatibility results and their paid deep insights: procedures compatibility.<name>, REST under
// /api/v1/compatibility/results.
import { operation } from '../shared/operation.js'
import { ErrorSchema } from '../shared/errors.js'
import { IdParams } from '../shared/validation.js'
import {
  CreateResultBody,
  ListResultsQuery,
  ResultPageSchema,
  ResultSchema,
  SaveDeepInsightsInput,
  UnlockInput,
} from './schemas.js'

const tags = ['compatibility']
const notFound = { 404: ErrorSchema }
const notPaid = { 402: ErrorSchema }

export const compatibilityContract = {
  compatibility: {
    createResult: operation
      .route({
        method: 'POST',
        path: '/compatibility/results',
        successStatus: 201,
        tags,
        summary: 'Store a compatibility result and its free lite summary (counts compatibilityChecks)',
      })
      .meta({ errors: { ...notPaid, ...notFound, 413: ErrorSchema } })
      .input(CreateResultBody)
      .output(ResultSchema),

    getResult: operation
      .route({
        method: 'GET',
        path: '/compatibility/results/{id}',
        tags,
        summary: 'One result of the user (admins and owners: any result, audited)',
      })
      .meta({ errors: notFound })
      .input(IdParams)
      .output(ResultSchema),

    listResults: operation
      .route({
        method: 'GET',
        path: '/compatibility/results',
        tags,
        summary: "The user's results, newest first, by cursor (without deep insights)",
      })
      .input(ListResultsQuery)
      .output(ResultPageSchema),

    unlockDeepInsights: operation
      .route({
        method: 'POST',
        path: '/compatibility/results/{id}/unlock',
        tags,
        summary: 'Unlock deep insights with a deep_insights purchase or the premium_plus plan (idempotent)',
      })
      .meta({ errors: { ...notPaid, ...notFound } })
      .input(UnlockInput)
      .output(ResultSchema),

    saveDeepInsights: operation
      .route({
        method: 'PUT',
        path: '/compatibility/results/{id}/deep-insights',
        tags,
        summary: 'Store the deep insights the client produced for an unlocked result',
      })
      // Deep insights may be up to 128 KiB of JSON, above the default body limit.
      .meta({ errors: { ...notPaid, ...notFound, 413: ErrorSchema }, bodyLimit: 200 * 1024 })
      .input(SaveDeepInsightsInput)
      .output(ResultSchema),
  },
}
