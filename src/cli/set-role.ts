// `set-role <email> <member|admin|owner>`: the way to make the first owner from a shell. Any role,
// owner included. The change is changeRole's (auth/account/roles.ts), like the admin API's: one
// transaction with its audit event; a promotion applies from the user's next request, a demotion
// ends every session of the user.
import type { DB } from '../../db/index.js'
import { findUserForUpdate } from '../admin/queries.js'
import { changeRole } from '../auth/account/roles.js'
import type { Role } from '../shared/roles.js'
import { systemClock } from '../shared/clock.js'

type SetRoleResult = { ok: true; from: Role; to: Role; sessionsRevoked: number } | { ok: false; reason: 'no_such_user' }

export async function setRole(db: DB, email: string, role: Role): Promise<SetRoleResult> {
  return db.transaction().execute(async (trx) => {
    const user = await findUserForUpdate(trx, { email: email.trim().toLowerCase() })
    if (!user) return { ok: false, reason: 'no_such_user' } as const
    // Setting the role a user already has changes nothing and is not audited.
    const { sessionsRevoked } =
      user.role === role
        ? { sessionsRevoked: 0 }
        : await changeRole(trx, {
            userId: user.id,
            from: user.role,
            to: role,
            actorId: null,
            ip: null,
            via: 'cli',
            now: systemClock.now(),
          })
    return { ok: true, from: user.role, to: role, sessionsRevoked } as const
  })
}
