// /api/v1/compatibility/*: the signed-in user's compatibility results and their deep insights.
import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { currentUser, viewerOf } from '../auth/guard.js'
import { ErrorSchema } from '../shared/errors.js'
import { contextOf } from '../shared/context.js'
import { IdParams } from '../shared/validation.js'
import {
  CreateResultBody,
  ListResultsQuery,
  ResultPageSchema,
  ResultSchema,
  SaveDeepInsightsBody,
  toResultJson,
  toResultPageJson,
  UnlockBody,
} from './schemas.js'
import { createResult, listResults, readResult, saveDeepInsights, unlockDeepInsights, type CompatibilityDeps } from './service.js'

const tags = ['compatibility']
const errors = { 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema }
// Deep insights may be up to 128 KiB of JSON, above the default body limit.
const DEEP_INSIGHTS_BODY_LIMIT = 200 * 1024

export default async function compatibilityRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()
  const deps: CompatibilityDeps = { db: fastify.db, clock: fastify.clock }

  app.post(
    '/api/v1/compatibility/results',
    {
      schema: {
        operationId: 'createResult',
        tags,
        summary: 'Store a compatibility result and its free lite summary (counts compatibilityChecks)',
        body: CreateResultBody,
        response: { 201: ResultSchema, 402: ErrorSchema, 413: ErrorSchema, ...errors },
      },
    },
    async (request, reply) => {
      const result = await createResult(deps, contextOf(request), currentUser(request), request.body)
      return reply.code(201).send(toResultJson(result))
    },
  )

  app.get(
    '/api/v1/compatibility/results',
    {
      schema: {
        operationId: 'listResults',
        tags,
        summary: "The user's results, newest first, by cursor (without deep insights)",
        querystring: ListResultsQuery,
        response: { 200: ResultPageSchema, ...errors },
      },
    },
    async (request) => toResultPageJson(await listResults(deps, contextOf(request), request.query)),
  )

  app.get(
    '/api/v1/compatibility/results/:id',
    {
      schema: {
        operationId: 'getResult',
        tags,
        summary: 'One result of the user (admins and owners: any result, audited)',
        params: IdParams,
        response: { 200: ResultSchema, ...errors },
      },
    },
    async (request) => toResultJson(await readResult(deps, contextOf(request), viewerOf(request), request.params.id)),
  )

  app.post(
    '/api/v1/compatibility/results/:id/unlock',
    {
      schema: {
        operationId: 'unlockDeepInsights',
        tags,
        summary: 'Unlock deep insights with a deep_insights purchase or the premium_plus plan (idempotent)',
        params: IdParams,
        body: UnlockBody,
        response: { 200: ResultSchema, 402: ErrorSchema, ...errors },
      },
    },
    async (request) => toResultJson(await unlockDeepInsights(deps, contextOf(request), currentUser(request), request.params.id)),
  )

  app.put(
    '/api/v1/compatibility/results/:id/deep-insights',
    {
      bodyLimit: DEEP_INSIGHTS_BODY_LIMIT,
      schema: {
        operationId: 'saveDeepInsights',
        tags,
        summary: 'Store the deep insights the client produced for an unlocked result',
        params: IdParams,
        body: SaveDeepInsightsBody,
        response: { 200: ResultSchema, 402: ErrorSchema, 413: ErrorSchema, ...errors },
      },
    },
    async (request) => toResultJson(await saveDeepInsights(deps, contextOf(request), request.params.id, request.body.content)),
  )
}
