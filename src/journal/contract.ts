// The journal: procedures journal.<name> at /api/v1/journal/<name>, REST under /api/v1/journal.
import { z } from 'zod'
import { operation } from '../shared/operation.js'
import { ErrorSchema } from '../shared/errors.js'
import { IdParams } from '../shared/validation.js'
import {
  CreateEntryBody,
  EntryPageSchema,
  EntrySchema,
  ListEntriesQuery,
  PromptSchema,
  TodayPromptQuery,
  UpdateEntryInput,
} from './schemas.js'

const tags = ['journal']
const notFound = { 404: ErrorSchema }

export const journalContract = {
  journal: {
    createEntry: operation
      .route({
        method: 'POST',
        path: '/journal/entries',
        successStatus: 201,
        tags,
        summary: 'Write a journal entry with a mood (counts journalEntries)',
      })
      .meta({ errors: { 402: ErrorSchema, ...notFound } })
      .input(CreateEntryBody)
      .output(EntrySchema),

    getEntry: operation
      .route({
        method: 'GET',
        path: '/journal/entries/{id}',
        tags,
        summary: 'One entry of the user (admins and owners: any entry, audited)',
      })
      .meta({ errors: notFound })
      .input(IdParams)
      .output(EntrySchema),

    listEntries: operation
      .route({ method: 'GET', path: '/journal/entries', tags, summary: "The user's entries, newest first, by cursor" })
      .input(ListEntriesQuery)
      .output(EntryPageSchema),

    updateEntry: operation
      .route({ method: 'PATCH', path: '/journal/entries/{id}', tags, summary: "Change some fields of the user's entry" })
      .meta({ errors: notFound })
      .input(UpdateEntryInput)
      .output(EntrySchema),

    deleteEntry: operation
      .route({
        method: 'DELETE',
        path: '/journal/entries/{id}',
        successStatus: 204,
        successDescription: 'Deleted',
        tags,
        summary: "Delete the user's entry",
      })
      .meta({ errors: notFound })
      .input(IdParams)
      .output(z.void()),

    getTodayPrompt: operation
      .route({
        method: 'GET',
        path: '/journal/prompt/today',
        tags,
        summary: 'The prompt of the day: the same for everybody on a date and locale',
      })
      .input(TodayPromptQuery)
      .output(PromptSchema),
  },
}
