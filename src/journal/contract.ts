// The journal: procedures journal.<name> at /api/v1/journal/<name>, REST under /api/v1/journal.
import { z } from 'zod'
import { failsWith, operation } from '../shared/operation.js'
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

export const journalContract = operation.tag('journal').router({
  journal: {
    createEntry: operation
      .route({
        method: 'POST',
        path: '/journal/entries',
        successStatus: 201,
        summary: 'Write a journal entry with a mood (counts journalEntries)',
      })
      .meta({ errors: failsWith(402, 404) })
      .input(CreateEntryBody)
      .output(EntrySchema),

    getEntry: operation
      .route({
        method: 'GET',
        path: '/journal/entries/{id}',
        summary: 'One entry of the user (admins and owners: any entry, audited)',
      })
      .meta({ errors: failsWith(404) })
      .input(IdParams)
      .output(EntrySchema),

    listEntries: operation
      .route({ method: 'GET', path: '/journal/entries', summary: "The user's entries, newest first, by cursor" })
      .input(ListEntriesQuery)
      .output(EntryPageSchema),

    updateEntry: operation
      .route({ method: 'PATCH', path: '/journal/entries/{id}', summary: "Change some fields of the user's entry" })
      .meta({ errors: failsWith(404) })
      .input(UpdateEntryInput)
      .output(EntrySchema),

    deleteEntry: operation
      .route({
        method: 'DELETE',
        path: '/journal/entries/{id}',
        successStatus: 204,
        successDescription: 'Deleted',
        summary: "Delete the user's entry",
      })
      .meta({ errors: failsWith(404) })
      .input(IdParams)
      .output(z.void()),

    getTodayPrompt: operation
      .route({
        method: 'GET',
        path: '/journal/prompt/today',
        summary: 'The prompt of the day: the same for everybody on a date and locale',
      })
      .input(TodayPromptQuery)
      .output(PromptSchema),
  },
})
