// /api/v1/journal/*: the signed-in user's journal entries and the daily prompt.
import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { currentUser, viewerOf } from '../auth/guard.js'
import { ErrorSchema } from '../shared/errors.js'
import { contextOf } from '../shared/context.js'
import { IdParams } from '../shared/validation.js'
import {
  CreateEntryBody,
  EntryPageSchema,
  EntrySchema,
  ListEntriesQuery,
  PromptSchema,
  TodayPromptQuery,
  toEntryJson,
  toEntryPageJson,
  UpdateEntryBody,
} from './schemas.js'
import { createEntry, deleteEntry, listEntries, readEntry, todayPrompt, updateEntry, type JournalDeps } from './service.js'

const tags = ['journal']
const errors = { 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema }

export default async function journalRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()
  const deps: JournalDeps = { db: fastify.db, clock: fastify.clock }

  app.post(
    '/api/v1/journal/entries',
    {
      schema: {
        operationId: 'createEntry',
        tags,
        summary: 'Write a journal entry with a mood (counts journalEntries)',
        body: CreateEntryBody,
        response: { 201: EntrySchema, 402: ErrorSchema, ...errors },
      },
    },
    async (request, reply) => {
      const entry = await createEntry(deps, contextOf(request), currentUser(request), request.body)
      return reply.code(201).send(toEntryJson(entry))
    },
  )

  app.get(
    '/api/v1/journal/entries',
    {
      schema: {
        operationId: 'listEntries',
        tags,
        summary: "The user's entries, newest first, by cursor",
        querystring: ListEntriesQuery,
        response: { 200: EntryPageSchema, ...errors },
      },
    },
    async (request) => toEntryPageJson(await listEntries(deps, contextOf(request), request.query)),
  )

  app.get(
    '/api/v1/journal/entries/:id',
    {
      schema: {
        operationId: 'getEntry',
        tags,
        summary: 'One entry of the user (admins and owners: any entry, audited)',
        params: IdParams,
        response: { 200: EntrySchema, ...errors },
      },
    },
    async (request) => toEntryJson(await readEntry(deps, contextOf(request), viewerOf(request), request.params.id)),
  )

  app.patch(
    '/api/v1/journal/entries/:id',
    {
      schema: {
        operationId: 'updateEntry',
        tags,
        summary: "Change some fields of the user's entry",
        params: IdParams,
        body: UpdateEntryBody,
        response: { 200: EntrySchema, ...errors },
      },
    },
    async (request) => toEntryJson(await updateEntry(deps, contextOf(request), request.params.id, request.body)),
  )

  app.delete(
    '/api/v1/journal/entries/:id',
    {
      schema: {
        operationId: 'deleteEntry',
        tags,
        summary: "Delete the user's entry",
        params: IdParams,
        response: { 204: z.null().describe('Deleted'), ...errors },
      },
    },
    async (request, reply) => {
      await deleteEntry(deps, contextOf(request), request.params.id)
      return reply.code(204).send(null)
    },
  )

  app.get(
    '/api/v1/journal/prompt/today',
    {
      schema: {
        operationId: 'getTodayPrompt',
        tags,
        summary: 'The prompt of the day: the same for everybody on a date and locale',
        querystring: TodayPromptQuery,
        response: { 200: PromptSchema, 400: ErrorSchema, 401: ErrorSchema },
      },
    },
    async (request) => todayPrompt(deps, contextOf(request), request.query),
  )
}
