// The personal-data operations (contract.ts): the signed-in user's data, their security activity, and erasure.
import { listSecurityEvents } from '../auth/security/events.js'
import { currentUser } from '../user/signed-in.js'
import { GUESTS_TOO, operationRoutes } from '../plugins/operations.js'
import { contextOf } from '../shared/context.js'
import { personalDataContract } from './contract.js'
import { deleteMyAccount, exportMyData, type PersonalDataDeps } from './service.js'

export default operationRoutes(
  personalDataContract,
  (app) => {
    const deps: PersonalDataDeps = { db: app.db, clock: app.clock, hasher: app.hasher }
    return {
      me: {
        exportMyData: (_input, request) => exportMyData(deps, contextOf(request), currentUser(request)),
        listSecurityEvents: (input, request) => listSecurityEvents(deps, contextOf(request), input),
        deleteMyAccount: async (input, request, reply) => {
          await deleteMyAccount(deps, contextOf(request), currentUser(request), request.session!, input?.password)
          app.sessionCookie.clear(reply)
        },
      },
    }
  },
  GUESTS_TOO,
)
