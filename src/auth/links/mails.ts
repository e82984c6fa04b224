// Every mail the service sends: its subject, its text, its link and how long the link lives, in one
// place. Services issue the token and decide when to send; what the mail says is decided here.
//
// No mail carries text that someone chose for it. A name is whatever whoever signs up types, and
// the verification, reset and change-of-address mails go to addresses nobody has proven: "Hello
// ${name}" made any sentence ("log in at https://evil.example/login") a line, and the first link,
// of our official mail to any address. So no mail names its account holder, not even to a proven
// address: a greeting is worth nothing next to that risk. The values a mail holds are our own links
// (a client's callbackURL travels inside them only once the redirect rule resolved it to a trusted
// origin) and, in mails to the account's proven address, the addresses of a change of address,
// which its owner must see to judge it (an address passes the email rule: no spaces, no link).
import type { Config } from '../../config.js'
import type { MailMessage } from '../../plugins/mailer.js'
import { approvalLink, verifyEmailLink } from './emailed-link.js'

const HOUR = 60 * 60 * 1000

/** How long each mailed link lives (better-auth's defaults). */
export const LINK_LIFETIME_MS = {
  resetPassword: HOUR,
  verifyEmail: 24 * HOUR,
  changeEmail: 24 * HOUR,
  deleteAccount: 24 * HOUR,
} as const

/** Where links point: this API (`AUTH_URL`) and the web front end (`WEB_ORIGIN`). */
export type LinkBase = Pick<Config['auth'], 'baseUrl' | 'webOrigin'>

const within = (ms: number) => (ms === HOUR ? 'one hour' : `${ms / HOUR} hours`)

/**
 * The reset link opens the web front end, which asks for the new password and posts it with the
 * token to /api/auth/reset-password: `${WEB_ORIGIN}/reset-password?token=...`, or `redirectTo` (a
 * relative path resolves against WEB_ORIGIN) with `token` added to its query.
 */
export function passwordResetMail(base: LinkBase, to: string, token: string, redirectTo?: string): MailMessage {
  const link = new URL(redirectTo ?? '/reset-password', base.webOrigin)
  link.searchParams.set('token', token)
  return {
    to,
    subject: 'Reset your password',
    text: `To choose a new password for your account, open this link within ${within(LINK_LIFETIME_MS.resetPassword)}:\n\n${link}\n\nIf you did not ask for this, ignore this email; your password stays as it is.\n`,
  }
}

/** The verification link, served by this API, which then redirects to `callbackURL`. */
export function verificationMail(base: LinkBase, to: string, token: string, callbackURL?: string): MailMessage {
  const link = verifyEmailLink(base.baseUrl, token, callbackURL)
  return {
    to,
    subject: 'Verify your email address',
    text: `To confirm this email address for your account, open this link within ${within(LINK_LIFETIME_MS.verifyEmail)}:\n\n${link}\n\nIf you did not create an account, ignore this email.\n`,
  }
}

/** To the new address of a change of address, which has proven nothing yet: not even the account's current address. */
export function newAddressMail(base: LinkBase, to: string, token: string, callbackURL?: string): MailMessage {
  const link = verifyEmailLink(base.baseUrl, token, callbackURL)
  return {
    to,
    subject: 'Confirm your new email address',
    text: `To make this address the email address of your account, open this link within ${within(LINK_LIFETIME_MS.changeEmail)}:\n\n${link}\n\nIf you did not ask for this, ignore this email; nothing changes.\n`,
  }
}

/**
 * To the account's current (proven) address: it approves the change first, and must see where to.
 * The link opens a page whose button approves (a mail scanner that opens it approves nothing).
 */
export function approveAddressChangeMail(base: LinkBase, to: string, newEmail: string, token: string): MailMessage {
  const link = approvalLink(base.baseUrl, token)
  return {
    to,
    subject: 'Approve the change of your email address',
    text: `Someone signed in to your account asked to change its email address to ${newEmail}. To approve, open this link within ${within(LINK_LIFETIME_MS.changeEmail)} and press Approve; a link to confirm the new address is then sent there:\n\n${link}\n\nIf this was not you, ignore this email and change your password.\n`,
  }
}

/** To the old address once the new one proved itself. */
export function addressChangedMail(to: string, newEmail: string): MailMessage {
  return {
    to,
    subject: 'Your email address was changed',
    text: `The email address of your account was changed from ${to} to ${newEmail}; this address no longer signs in to it.\n\nIf this was not you, reply to this email at once.\n`,
  }
}

/** The deletion link of an account without a password, opened where its owner is signed in. */
export function deletionMail(base: LinkBase, to: string, token: string, callbackURL: string): MailMessage {
  const link = new URL('/api/auth/delete-user/callback', base.baseUrl)
  link.searchParams.set('token', token)
  link.searchParams.set('callbackURL', callbackURL)
  return {
    to,
    subject: 'Confirm the deletion of your account',
    text: `To delete your account and its data for good, open this link within ${within(LINK_LIFETIME_MS.deleteAccount)}, in the browser where you are signed in:\n\n${link}\n\nIf you did not ask for this, ignore this email; your account stays.\n`,
  }
}

/** How long a sign-in link lives (better-auth's magic-link default: five minutes). */
export const MAGIC_LINK_LIFETIME_MS = 5 * 60 * 1000

/**
 * A sign-in link, served by this API: opening it shows a page whose button signs in (a mail
 * scanner that opens it signs nobody in and spends nothing). Where it goes next was resolved by the
 * redirect rule when it was asked for and is kept with the token, not in the link.
 */
export function magicLinkMail(base: LinkBase, to: string, token: string): MailMessage {
  const link = new URL('/api/auth/magic-link/verify', base.baseUrl)
  link.searchParams.set('token', token)
  return {
    to,
    subject: 'Your sign-in link',
    text: `To sign in, open this link within five minutes and confirm:\n\n${link}\n\nIf you did not ask for this, ignore this email; nobody can sign in without opening it.\n`,
  }
}

const CODE_WORDING = {
  'sign-in-code': { subject: 'Your sign-in code', use: 'sign in' },
  'verify-email-code': { subject: 'Your verification code', use: 'confirm this email address' },
  'reset-password-code': { subject: 'Your password reset code', use: 'choose a new password' },
} as const

/** A one-time code (links/codes.ts): six digits, five minutes. Nothing but our own words and the code. */
export function codeMail(to: string, purpose: keyof typeof CODE_WORDING, code: string): MailMessage {
  const { subject, use } = CODE_WORDING[purpose]
  return {
    to,
    subject,
    text: `Your code to ${use} is:\n\n${code}\n\nIt works once, within five minutes. Never tell it to anyone: we will never ask for it.\nIf you did not ask for this, ignore this email.\n`,
  }
}
