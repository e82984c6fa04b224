// Guests (better-auth 1.6's anonymous plugin): a visitor gets a user and a session at once, with no
// address and no password, and uses the member's business operations within the free plan (the
// route policy lets a guest in only where a route says `guests`). When that browser signs up or
// signs in, by any way in, what the guest made (never its consents) moves to the account in the
// transaction that starts the account's session (sign-in/adopt-guest.ts, called from sign-in/step.ts,
// the one place every sign-in births a session), and the guest ends; only in the browser that made
// the guest (its guest cookie, sign-in/guest-cookie.ts). A guest nobody can reach any more is purged.
import type { DB } from '../../../db/index.js'
import { recordAudit } from '../../shared/audit.js'
import type { Clock } from '../../shared/clock.js'
import type { RequestContext } from '../../shared/context.js'
import { AppError } from '../../shared/errors.js'
import { newId } from '../../shared/ids.js'
import type { SessionUser } from '../../user/types.js'
import { GUEST_METHOD } from '../sign-in/adopt-guest.js'
import { deleteGuest, lockGuest } from '../sign-in/guest-queries.js'
import { type BrowserState, type SignInDeps, type SignInOutcome, signInWith } from '../sign-in/step.js'
import { insertGuest, lockUnreachableGuests } from './queries.js'

/** better-auth's anonymous plugin's name for a guest, and its error codes (its client knows them). */
const GUEST_NAME = 'Anonymous'
export const GUEST_ERRORS = {
  ANONYMOUS_USERS_CANNOT_SIGN_IN_AGAIN_ANONYMOUSLY: 'Anonymous users cannot sign in again anonymously',
  USER_IS_NOT_ANONYMOUS: 'User is not anonymous',
} as const

/**
 * A guest's address: unique, and in the `.invalid` domain (RFC 2606), which never receives mail, so
 * nothing the service sends to an account's address can reach anyone for a guest.
 */
const guestEmail = (id: string) => `guest-${id.toLowerCase()}@guest.invalid`

/** A new guest and its session. A browser already signed in as a guest gets better-auth's 400. */
export async function signInAsGuest(
  deps: SignInDeps,
  ctx: RequestContext,
  current: SessionUser | null,
  browser: BrowserState,
): Promise<{ user: SessionUser; outcome: Extract<SignInOutcome, { kind: 'session' }> }> {
  if (current?.isAnonymous) {
    throw new AppError(
      400,
      'ANONYMOUS_USERS_CANNOT_SIGN_IN_AGAIN_ANONYMOUSLY',
      GUEST_ERRORS.ANONYMOUS_USERS_CANNOT_SIGN_IN_AGAIN_ANONYMOUSLY,
    )
  }
  const id = newId()
  const now = deps.clock.now()
  await insertGuest(deps.db, { id, email: guestEmail(id), name: GUEST_NAME, now })
  await recordAudit(deps.db, { actorId: id, action: 'auth.guest_created', targetType: 'user', targetId: id, ip: ctx.ip })
  // A member's session the browser held ends, as at every sign-in; it is no guest's to move.
  const outcome = await signInWith(deps, ctx, {
    credential: { userId: id, epoch: 0 },
    method: GUEST_METHOD,
    rememberMe: true,
    browser: { ...browser, guest: null },
  })
  const user: SessionUser = {
    id,
    name: GUEST_NAME,
    email: guestEmail(id),
    emailVerified: false,
    image: null,
    role: 'member',
    plan: 'free',
    planExpiresAt: null,
    twoFactorEnabled: false,
    isAnonymous: true,
    createdAt: now,
    updatedAt: now,
  }
  return { user, outcome }
}

/** better-auth's delete-anonymous-user: the guest ends with what it made. 403 for an account. */
export async function deleteGuestUser(db: DB, ctx: RequestContext, user: SessionUser): Promise<void> {
  if (!user.isAnonymous) throw new AppError(403, 'USER_IS_NOT_ANONYMOUS', GUEST_ERRORS.USER_IS_NOT_ANONYMOUS)
  await db.transaction().execute(async (trx) => {
    if (!(await lockGuest(trx, user.id))) return
    await deleteGuest(trx, user.id)
    await recordAudit(trx, { actorId: user.id, action: 'auth.guest_deleted', targetType: 'user', targetId: user.id, ip: ctx.ip })
  })
}

const PURGE_BATCH = 200
const MAX_BATCHES = 50

/**
 * The maintenance task's turn: deletes, with their data, the guests nobody can reach any more (no
 * live session) and untouched for `ttlDays` (no session started or renewed). Batches lock their
 * guests with `skip locked`: a guest whose browser is signing in right now is being moved, never
 * purged, and several instances never delete one twice.
 */
export async function purgeGuests(deps: { db: DB; clock: Clock }, ttlDays: number): Promise<number> {
  const now = deps.clock.now()
  const untouchedSince = new Date(now.getTime() - ttlDays * 24 * 60 * 60 * 1000)
  let total = 0
  for (let batch = 0; batch < MAX_BATCHES; batch++) {
    const purged = await deps.db.transaction().execute(async (trx) => {
      const ids = await lockUnreachableGuests(trx, now, untouchedSince, PURGE_BATCH)
      for (const id of ids) await deleteGuest(trx, id)
      return ids.length
    })
    total += purged
    if (purged < PURGE_BATCH) break
  }
  return total
}
