// Where a guest becomes an account: called by the one place every sign-in births a session
// (step.ts, signInWith), in that session's transaction.
import type { Trx } from '../../../db/index.js'
import { recordAudit } from '../../shared/audit.js'
import type { RequestContext } from '../../shared/context.js'
import { deleteGuest, lockGuest, moveGuestData } from './guest-queries.js'

/** The login method a guest's session names: never written to the last-login-method cookie (step.ts). */
export const GUEST_METHOD = 'anonymous'

/**
 * In the transaction that starts the session of `userId` for a browser signed in as `guestId`:
 * moves the guest's data to the account and deletes the guest (its sessions and consents with it).
 * The browser just proved `userId` (this is the session's birth, after every factor), and `guestId`
 * is its validated session's user, made in this browser (guest-cookie.ts). Audited, and shown in the
 * account's security activity: the owner sees that data came in. A guest moved or purged meanwhile
 * has nothing left to move.
 */
export async function adoptGuest(trx: Trx, ctx: RequestContext, guestId: string, userId: string): Promise<void> {
  if (guestId === userId || !(await lockGuest(trx, guestId))) return
  const moved = await moveGuestData(trx, guestId, userId)
  await deleteGuest(trx, guestId)
  await recordAudit(trx, {
    actorId: userId,
    action: 'auth.guest_adopted',
    targetType: 'user',
    targetId: userId,
    ip: ctx.ip,
    details: { guestId, ...moved },
  })
}
