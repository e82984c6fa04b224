// Suspension: what a ban does to signing in, wherever the sign-in comes from. The admin service sets
// and lifts bans (src/admin/service.ts); this module is the one gate that reads them, with
// better-auth's admin plugin's rules: a banned user gets 403 BANNED_USER and no session, and a ban
// whose expiry has passed no longer applies and is lifted.
import type { Executor } from '../../../db/index.js'
import { recordAudit } from '../../shared/audit.js'
import type { RequestContext } from '../../shared/context.js'
import { iso } from '../../shared/dates.js'
import { AppError } from '../../shared/errors.js'
import { findBan, liftExpiredBan } from './queries.js'
import type { Ban } from '../../user/types.js'

/** better-auth's admin plugin's code and default message. */
export const bannedUser = () =>
  new AppError(
    403,
    'BANNED_USER',
    'You have been banned from this application. Please contact support if you believe this is an error.',
  )

/** Whether the ban holds at `now`: without an expiry, until it is lifted; with one, until it passes. */
export function isBanned(ban: Pick<Ban, 'banned' | 'banExpiresAt'>, now: Date): boolean {
  return ban.banned && (ban.banExpiresAt === null || ban.banExpiresAt.getTime() > now.getTime())
}

/**
 * The check of every sign-in, before anything is created for the user (a session, a link to an
 * identity, a rehash, a mail): true while a ban holds, and the caller refuses with 403
 * BANNED_USER. A ban that has expired is lifted here and audited, as better-auth lifts it when the
 * user next signs in. Run it on the caller's transaction when there is one (PGlite deadlocks on
 * `db` inside an open transaction).
 */
export async function banHolds(db: Executor, ctx: RequestContext, userId: string, now: Date): Promise<boolean> {
  const ban = await findBan(db, userId)
  if (!ban?.banned) return false
  if (isBanned(ban, now)) return true
  if (!(await liftExpiredBan(db, userId, now))) {
    // Changed meanwhile: lifted by someone else, or banned again.
    const again = await findBan(db, userId)
    return again !== undefined && isBanned(again, now)
  }
  await recordAudit(db, {
    actorId: null,
    action: 'admin.user.unbanned',
    targetType: 'user',
    targetId: userId,
    ip: ctx.ip,
    details: {
      via: 'expired',
      before: { banned: true, banReason: ban.banReason, banExpiresAt: iso(ban.banExpiresAt) },
      after: { banned: false, banReason: null, banExpiresAt: null },
    },
  })
  return false
}
