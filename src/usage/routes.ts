// getPlanAndUsage and usage.increment (contract.ts), for the signed-in user only.
import { currentUser } from '../user/signed-in.js'
import { GUESTS_TOO, operationRoutes } from '../plugins/operations.js'
import { contextOf } from '../shared/context.js'
import { CountWriter } from './count-writer.js'
import { usageContract } from './contract.js'
import { getPlanAndUsage, incrementUsage, type UsageDeps } from './service.js'

export default operationRoutes(
  usageContract,
  (app) => {
    const deps: UsageDeps = { db: app.db, clock: app.clock, counts: new CountWriter(app.db) }
    return {
      getPlanAndUsage: (_input, request) => getPlanAndUsage(deps, contextOf(request), currentUser(request)),
      usage: {
        increment: ({ metric, amount = 1 }, request) =>
          incrementUsage(deps, contextOf(request), currentUser(request), metric, amount),
      },
    }
  },
  GUESTS_TOO,
)
