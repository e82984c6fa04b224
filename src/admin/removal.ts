// An administrator removes a user (better-auth's admin plugin's remove-user): THE deletion of an
// account (src/user/erase.ts), the one DELETE /api/v1/me and delete-user run, anonymising what
// outlives it. Its rules: never an owner (the command line's business), never one's own account
// (deleted signed in, with the password).
import { recordAudit } from '../shared/audit.js'
import type { RequestContext } from '../shared/context.js'
import { forbidden, notFound } from '../shared/errors.js'
import { assertDeletable, eraseAccount } from '../user/erase.js'
import { findUserForUpdate } from './queries.js'
import type { AdminDeps } from './service.js'

export async function removeUser(deps: AdminDeps, ctx: RequestContext, id: string): Promise<void> {
  if (id === ctx.actorId) throw forbidden('Delete your own account from your account, signed in')
  await deps.db.transaction().execute(async (trx) => {
    const user = await findUserForUpdate(trx, { id })
    if (!user) throw notFound('User')
    assertDeletable(user)
    // Ids only: the deletion removes the address from the audit trail, and this event must not put it back.
    await recordAudit(trx, { actorId: ctx.actorId, action: 'admin.user.removed', targetType: 'user', targetId: id, ip: ctx.ip })
    await eraseAccount(trx, user)
  })
}
