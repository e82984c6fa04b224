// "This wasn't me": what a security notice's link does once its page is confirmed (a POST; opening
// the link, as a mail scanner does, only shows the page). The account is secured against whoever
// made the change: every session ends (and every sign-in in flight: the credential epoch rises),
// every provider link goes (a sign-in with one would skip the password reset), every pending emailed
// link, sign-in awaiting a second factor and trusted device stops working, every known device is
// forgotten (devices.ts), and the password must be reset before it signs in again; an address
// change is undone.
//
// A link any reader of the mailbox can use never takes a second factor away (TOTP, passkeys), or a
// mailbox alone would get past it (secure, then reset, then sign in without it): docs/http-contract.md,
// "Recovery". A passkey someone else added is removed by the owner signed in with another factor,
// or by an administrator. The reset that follows takes the account back when its ways in were never
// proven its mailbox holder's and it has no second factor, as every reset does.
//
// It cannot lock a stranger out: the token names the one account it was issued for and the address
// it was mailed to, and works only while the account still has that address, so what its holder can
// do is what that address's holder could already do with a password reset (for an address change's
// notice: could do a moment before the change). An address change is undone as it was: an address
// never proven goes back unproven; one that is another account's by then is not taken from it (409).
import type { DB } from '../../../db/index.js'
import { recordUserEvent } from '../../shared/audit.js'
import type { Clock } from '../../shared/clock.js'
import type { RequestContext } from '../../shared/context.js'
import { AppError } from '../../shared/errors.js'
import { emailTaken, replaceEmail } from './queries.js'
import { deleteAccountsBut, endSessionsOfUser } from '../core/queries.js'
import { findUserById, lockUser } from '../../user/queries.js'
import type { UserWithFlags } from '../../user/types.js'
import { consumeToken, invalidToken, peekToken, revokeTokens, type VerificationRecord } from '../links/verification.js'
import { NOTICE_PURPOSE, type NoticeData, type NoticeEvent } from '../security/notices.js'
import { forgetKnownDevices, requirePasswordReset } from '../security/queries.js'

export interface SecureAccountDeps {
  db: DB
  clock: Clock
}

const EVENTS: readonly NoticeEvent[] = [
  'password_reset',
  'password_changed',
  'email_changed',
  'two_factor_enabled',
  'two_factor_disabled',
  'provider_linked',
  'provider_unlinked',
  'new_device',
  'passkey_added',
  'passkey_removed',
  'account_taken_back',
]

function noticeOf(record: VerificationRecord): NoticeData | null {
  const { event, at, email, restore, restoreUnproven } = record.data
  if (!EVENTS.includes(event as NoticeEvent) || typeof at !== 'string' || typeof email !== 'string') return null
  return {
    event: event as NoticeEvent,
    at,
    email,
    ...(typeof restore === 'string' ? { restore } : {}),
    ...(restoreUnproven === true ? { restoreUnproven } : {}),
  }
}

/**
 * The address a notice puts back is another account's by now: nothing is changed (sessions kept,
 * the link not spent), since securing the account would mail its reset link to the address it was
 * moved to, the one in dispute. The link works again once the address is free; until then an
 * administrator settles it.
 */
const addressTaken = () =>
  new AppError(
    409,
    'ADDRESS_TAKEN',
    'The address this link would put back now belongs to another account: nothing was changed; contact support',
  )

/** The notice of a live link whose account still has the address it was mailed to; null otherwise. Changes nothing. */
export async function findNotice(deps: SecureAccountDeps, token: string): Promise<NoticeData | null> {
  const record = await peekToken(deps.db, NOTICE_PURPOSE, token, deps.clock.now())
  const notice = record && noticeOf(record)
  if (!record || !notice) return null
  const user = await findUserById(deps.db, record.userId)
  return user?.email === notice.email ? notice : null
}

/**
 * Secures the account of the notice's link (used up here). Returns the account, whose owner is
 * then mailed a link to choose the new password.
 */
export async function secureAccount(deps: SecureAccountDeps, ctx: RequestContext, token: string): Promise<UserWithFlags> {
  // Looked at first, without spending it: whose account, so that its row is locked before the token is spent.
  const peeked = await peekToken(deps.db, NOTICE_PURPOSE, token, deps.clock.now())
  if (!peeked) throw invalidToken()
  const userId = peeked.userId
  try {
    return await deps.db.transaction().execute(async (trx) => {
      const now = deps.clock.now()
      // The user row first, the order of every writer of the account.
      const current = await lockUser(trx, { id: userId }, ['email'])
      const record = await consumeToken(trx, NOTICE_PURPOSE, token, now)
      const notice = record && noticeOf(record)
      if (!record || record.userId !== userId || !notice) throw invalidToken()
      // The account moved to another address since: the link's holder no longer speaks for it.
      if (current?.email !== notice.email) throw invalidToken()
      let restored = false
      if (notice.restore !== undefined) {
        if (await emailTaken(trx, notice.restore)) throw addressTaken()
        const verified = notice.restoreUnproven !== true
        restored = (await replaceEmail(trx, userId, notice.email, notice.restore, now, { verified })) !== undefined
      }
      const removedAccounts = await deleteAccountsBut(trx, userId, 'password')
      await requirePasswordReset(trx, userId, now)
      // Sign-ins in flight end too: the credential epoch rises with it.
      const sessionsEnded = await endSessionsOfUser(trx, userId)
      // Every row of `verification` of the account: emailed links (this kind too), sign-ins waiting
      // for their second factor, trusted devices.
      const tokensRevoked = await revokeTokens(trx, userId)
      // Whoever made the change signed in from a browser the account now knows: it is forgotten
      // with the owner's (whose reset makes its own browser known again).
      const knownDevicesForgotten = await forgetKnownDevices(trx, userId)
      await recordUserEvent(trx, ctx, userId, 'auth.account_secured', {
        notice: notice.event,
        sessionsEnded,
        tokensRevoked,
        knownDevicesForgotten,
        ...(removedAccounts.length ? { removedAccounts } : {}),
        ...(restored ? { addressRestored: true } : {}),
      })
      return (await findUserById(trx, userId))!
    })
  } catch (err) {
    // The address to put back was taken between the check and the change; the link was not used up.
    if ((err as { code?: string }).code === '23505') throw addressTaken()
    throw err
  }
}
