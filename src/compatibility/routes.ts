// The compatibility operations (contract.ts): the signed-in user's results and their deep insights.
import { currentUser, viewerOf } from '../user/signed-in.js'
import { GUESTS_TOO, operationRoutes } from '../plugins/operations.js'
import { contextOf } from '../shared/context.js'
import { compatibilityContract } from './contract.js'
import { createResult, listResults, readResult, saveDeepInsights, unlockDeepInsights, type CompatibilityDeps } from './service.js'

export default operationRoutes(
  compatibilityContract,
  (app) => {
    const deps: CompatibilityDeps = { db: app.db, clock: app.clock }
    return {
      compatibility: {
        createResult: (input, request) => createResult(deps, contextOf(request), currentUser(request), input),
        getResult: ({ id }, request) => readResult(deps, contextOf(request), viewerOf(request), id),
        listResults: (input, request) => listResults(deps, contextOf(request), input),
        unlockDeepInsights: ({ id }, request) => unlockDeepInsights(deps, contextOf(request), currentUser(request), id),
        saveDeepInsights: ({ id, content }, request) => saveDeepInsights(deps, contextOf(request), id, content),
      },
    }
  },
  GUESTS_TOO,
)
