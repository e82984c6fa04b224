// The journal's operations (contract.ts): the signed-in user's entries and the daily prompt.
import { currentUser, viewerOf } from '../user/signed-in.js'
import { GUESTS_TOO, operationRoutes } from '../plugins/operations.js'
import { contextOf } from '../shared/context.js'
import { journalContract } from './contract.js'
import { createEntry, deleteEntry, listEntries, readEntry, todayPrompt, updateEntry, type JournalDeps } from './service.js'

export default operationRoutes(
  journalContract,
  (app) => {
    const deps: JournalDeps = { db: app.db, clock: app.clock }
    return {
      journal: {
        createEntry: (input, request) => createEntry(deps, contextOf(request), currentUser(request), input),
        getEntry: ({ id }, request) => readEntry(deps, contextOf(request), viewerOf(request), id),
        listEntries: (input, request) => listEntries(deps, contextOf(request), input),
        updateEntry: ({ id, ...changes }, request) => updateEntry(deps, contextOf(request), id, changes),
        deleteEntry: ({ id }, request) => deleteEntry(deps, contextOf(request), id),
        getTodayPrompt: (input, request) => todayPrompt(deps, contextOf(request), input),
      },
    }
  },
  GUESTS_TOO,
)
