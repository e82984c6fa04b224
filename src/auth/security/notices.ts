// The security notices: a mail to the account's owner on each change to its ways in (password,
// address, two-factor, provider links, passkeys) and on a sign-in from a device it had not used before, each
// with a one-click "this wasn't me" link (account/secure.ts says what the link does).
//
// The link's token is single-use, lives 7 days and is stored hashed (verification.ts, purpose
// `security-notice`); it names the account it was issued for and the address it was mailed to, and
// works only while that account still has that address. The mails carry no text anyone but this
// service chose (no name, no browser string, an address only when it is an IP literal) and no
// secret but the link. They are sent in the background once the event's transaction commits.
import { isIP } from 'node:net'
import type { Executor } from '../../../db/index.js'
import type { Config } from '../../config.js'
import type { Mailer } from '../../plugins/mailer.js'
import type { Clock } from '../../shared/clock.js'
import type { RequestContext } from '../../shared/context.js'
import { issueToken, type VerificationPurpose } from '../links/verification.js'
import { countLinksExpiringAfter } from '../links/verification.js'
import { addressOf } from './queries.js'

export type NoticeEvent =
  | 'password_reset'
  | 'password_changed'
  | 'email_changed'
  | 'two_factor_enabled'
  | 'two_factor_disabled'
  | 'provider_linked'
  | 'provider_unlinked'
  | 'new_device'
  | 'passkey_added'
  | 'passkey_removed'
  | 'account_taken_back'
  | 'impersonated'

export const NOTICE_PURPOSE = 'security-notice' satisfies VerificationPurpose
export const NOTICE_TTL_MS = 7 * 24 * 60 * 60 * 1000
/**
 * Notices per account per hour, counted from the links issued (in the database, so on every
 * instance). Their own budget, not the mail routes' one: a stranger who spends an address's mail
 * budget on reset requests must not silence the notice of what comes next.
 */
export const NOTICES_PER_HOUR = 10
const HOUR_MS = 60 * 60 * 1000

/** What the link's token holds besides the account: the event, when, and the address it was mailed to. */
export interface NoticeData {
  event: NoticeEvent
  at: string
  /** The account's address the link belongs to: it works only while the account has this address. */
  email: string
  /** An address change: the address it had before, which the link puts back. */
  restore?: string
  /**
   * That address had never been proven the account's: it goes back unverified, as it was, and the
   * words allow for a holder who never made the account (a typo at sign-up, fixed by the change).
   */
  restoreUnproven?: true
}

/** A notice's mail, to send once the transaction that issued its link has committed. */
export type PendingNotice = () => void
const NOTHING: PendingNotice = () => {}

/** What each notice says happened, and its subject. Fixed words only. */
const WORDING: Record<NoticeEvent, { subject: string; happened: string }> = {
  password_reset: { subject: 'your password was reset', happened: 'The password of your account was reset' },
  password_changed: { subject: 'your password was changed', happened: 'The password of your account was changed' },
  email_changed: {
    subject: 'your email address was changed',
    happened: 'The email address of your account was changed from this address to another one',
  },
  two_factor_enabled: {
    subject: 'two-factor authentication was turned on',
    happened: 'Two-factor authentication was turned on for your account',
  },
  two_factor_disabled: {
    subject: 'two-factor authentication was turned off',
    happened: 'Two-factor authentication was turned off for your account',
  },
  provider_linked: {
    subject: 'a sign-in provider was linked',
    happened: 'A sign-in provider account was linked to your account, and can now sign in to it',
  },
  provider_unlinked: {
    subject: 'a way to sign in was removed',
    happened: 'A way to sign in (the password or a sign-in provider) was removed from your account',
  },
  passkey_added: {
    subject: 'a passkey was added',
    happened: 'A passkey was added to your account, and can now sign in to it without the password',
  },
  passkey_removed: {
    subject: 'a passkey was removed',
    happened: 'A passkey was removed from your account',
  },
  account_taken_back: {
    subject: 'your account was taken back through its mailbox',
    happened:
      'Your account was signed in to or reset through this mailbox while nobody had proven its ways in were yours: ' +
      'every other way to sign in was removed, every session ended, and an administrator role, if it had one, was lowered to member',
  },
  impersonated: {
    subject: 'an administrator opened your account',
    happened:
      'An administrator of the service opened your account as you see it, to help with a support request, for at most an hour',
  },
  new_device: {
    subject: 'a sign-in from a new device',
    happened: 'Your account was signed in to from a device (browser) it had not used before',
  },
}

export const noticeSubject = (event: NoticeEvent) => `Security notice: ${WORDING[event].subject}`
export const noticeHappened = (notice: Pick<NoticeData, 'event' | 'restoreUnproven'>) =>
  notice.restoreUnproven
    ? 'The email address of an account registered with this address, which this address had never confirmed, was changed to another one'
    : WORDING[notice.event].happened

/** A time as the mails and the page print it: fixed format, UTC. */
export const printedTime = (at: Date) => `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`

export interface SecurityNoticeDeps {
  clock: Clock
  mailer: Mailer
  config: Pick<Config['auth'], 'baseUrl'>
}

export class SecurityNotices {
  constructor(private readonly deps: SecurityNoticeDeps) {}

  /**
   * Issues the notice's link in `db` (the event's transaction) and returns its mail, to the
   * account's current address. Nothing when the account is gone or its notices this hour are spent.
   */
  async prepare(db: Executor, ctx: RequestContext, userId: string, event: Exclude<NoticeEvent, 'email_changed'>) {
    const address = await addressOf(db, userId)
    if (!address) return NOTHING
    return this.issue(db, ctx, userId, address.email, { event, email: address.email })
  }

  /**
   * The notice of an address change, to the address the account had before (`from`), whose link
   * also puts that address back (account/secure.ts), as it was: verified or not. An unproven `from` is told
   * too (issue 34): a stolen session of an unverified account would otherwise move it away in
   * silence. Its holder is perhaps a stranger (a typo at sign-up, fixed by this change); what the
   * link lets them do is what they could do a moment before (a reset to that address takes an
   * unproven account back), for the notice's 7 days, and the words tell a stranger to ignore it.
   */
  async prepareAddressChange(
    db: Executor,
    ctx: RequestContext,
    userId: string,
    change: { from: string; to: string; fromVerified: boolean },
  ) {
    return this.issue(db, ctx, userId, change.from, {
      event: 'email_changed',
      email: change.to,
      restore: change.from,
      ...(change.fromVerified ? {} : { restoreUnproven: true as const }),
    })
  }

  private async issue(
    db: Executor,
    ctx: RequestContext,
    userId: string,
    to: string,
    data: Omit<NoticeData, 'at'>,
  ): Promise<PendingNotice> {
    const now = this.deps.clock.now()
    const expiresAt = new Date(now.getTime() + NOTICE_TTL_MS)
    // Issued within the last hour: expiring later than an hour short of a full lifetime from now.
    const lastHour = await countLinksExpiringAfter(db, userId, NOTICE_PURPOSE, new Date(expiresAt.getTime() - HOUR_MS))
    if (lastHour >= NOTICES_PER_HOUR) {
      ctx.log.warn({ event: data.event }, 'security notice skipped: the hourly notices of this account are spent')
      return NOTHING
    }
    const notice: NoticeData = { ...data, at: now.toISOString() }
    const token = await issueToken(db, NOTICE_PURPOSE, userId, { expiresAt, data: { ...notice } })
    const link = new URL('/api/auth/security-notice', this.deps.config.baseUrl)
    link.searchParams.set('token', token)
    const text = noticeText(notice, now, ctx.ip, link)
    return () => this.deps.mailer.sendInBackground({ to, subject: noticeSubject(notice.event), text })
  }
}

function noticeText(notice: NoticeData, at: Date, ip: string | null, link: URL): string {
  // The request's address only when it is an address: behind a proxy it comes from a header.
  const from = ip && isIP(ip) ? `, from the network address ${ip}` : ''
  const happened = `${noticeHappened(notice)} on ${printedTime(at)}${from}.`
  const secures =
    'every session of the account ends, linked sign-in providers are removed, every pending emailed link and remembered device stops working, and a new password must be chosen (a link to choose one is then mailed to you) before the account can be signed in to again.'
  if (notice.restoreUnproven) {
    return `${happened}

If you registered that account and did not make this change, open this link within 7 days to put this address back and secure the account: ${secures}

${link}

If you never registered an account with this address, ignore this email: nothing happens, and this is the last mail about it.
`
  }
  return `${happened}

If this was you, there is nothing to do.

If it was not you, open this link within 7 days to secure your account: ${secures}

${link}
`
}
