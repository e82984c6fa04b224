// getProfile and updateProfile (contract.ts): the signed-in user's own profile, nobody else's.
import { currentUser } from '../user/signed-in.js'
import { contextOf } from '../shared/context.js'
import { GUESTS_TOO, operationRoutes } from '../plugins/operations.js'
import { answersFrozen } from '../plugins/rpc-direct.js'
import { profileContract } from './contract.js'
import { updateProfile } from './service.js'

export default operationRoutes(
  profileContract,
  (app) => {
    const deps = { db: app.db, clock: app.clock }
    return {
      // Read with the session, in its one query (src/auth/session/queries.ts): answered from memory,
      // the object the session cache froze, so its RPC answer is kept with it.
      getProfile: answersFrozen((_input, request) => currentUser(request).profile),
      updateProfile: (input, request) => updateProfile(deps, contextOf(request), currentUser(request), input),
    }
  },
  GUESTS_TOO,
)
