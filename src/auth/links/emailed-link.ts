// The link single-use tokens (verification.ts) travel in by mail, and where the browser lands once
// it opens a link that does its work on the GET (verify-email, the deletion link). Email accounts and
// account self-service mail the same link and land the same way.
import type { FastifyReply } from 'fastify'
import { AppError } from '../../shared/errors.js'
import { withQuery } from '../../shared/redirect.js'

/**
 * The one link better-auth mails for a verification and every step of a change of address: this
 * API's verify-email, which then redirects to `callbackURL`.
 */
export function verifyEmailLink(baseUrl: string, token: string, callbackURL: string | undefined): URL {
  const link = new URL('/api/auth/verify-email', baseUrl)
  link.searchParams.set('token', token)
  if (callbackURL) link.searchParams.set('callbackURL', callbackURL)
  return link
}

/** The page a verified account's current address approves a change of address on (its button acts). */
export const APPROVE_ADDRESS_CHANGE_PATH = '/api/auth/change-email/approve'

/**
 * The approval link of a change of address: a page, not better-auth's verify-email GET, so a mail
 * scanner that opens it approves nothing. Where the new address's link lands is kept with the token.
 */
export function approvalLink(baseUrl: string, token: string): URL {
  const link = new URL(APPROVE_ADDRESS_CHANGE_PATH, baseUrl)
  link.searchParams.set('token', token)
  return link
}

/**
 * Uses an opened link (`use` spends its token) and answers what `use` returns; with a
 * `callbackURL` (already judged by the redirect rule) the browser is sent there instead. A bad
 * token lands there too, with `?error=` spelled as better-auth spells it on that route; any other
 * error, and a bad token without a callbackURL, is answered as JSON like on any route.
 */
export async function landAfterLink<T>(
  reply: FastifyReply,
  callbackURL: string | undefined,
  invalidTokenError: 'invalid_token' | 'INVALID_TOKEN',
  use: () => Promise<T>,
): Promise<T | FastifyReply> {
  let answer: T
  try {
    answer = await use()
  } catch (err) {
    if (!callbackURL || !(err instanceof AppError)) throw err
    if (err.code === 'INVALID_TOKEN') return reply.redirect(withQuery(callbackURL, { error: invalidTokenError }), 302)
    // The web app says "sign in, then open the link again" (the link is still good).
    if (err.code === 'SIGN_IN_TO_CONFIRM_EMAIL_CHANGE') return reply.redirect(withQuery(callbackURL, { error: err.code }), 302)
    throw err
  }
  return callbackURL ? reply.redirect(callbackURL, 302) : answer
}
