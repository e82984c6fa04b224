// The consent operations (contract.ts): a signed-in user's consent decisions.
import { GUESTS_TOO, operationRoutes } from '../plugins/operations.js'
import { contextOf } from '../shared/context.js'
import { consentContract } from './contract.js'
import { type ConsentDeps, getConsents, giveConsent } from './service.js'

export default operationRoutes(
  consentContract,
  (app) => {
    const deps: ConsentDeps = { db: app.db }
    return {
      consent: {
        recordConsent: (input, request) => giveConsent(deps, contextOf(request), input),
        getConsents: (_input, request) => getConsents(deps, contextOf(request)),
      },
    }
  },
  GUESTS_TOO,
)
