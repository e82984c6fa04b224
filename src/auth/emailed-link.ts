// Where the browser lands once it opens an emailed link that does its work on the GET (verify-email,
// the deletion link). Email accounts and account self-service land the same way.
import type { FastifyReply } from 'fastify'
import { AppError } from '../shared/errors.js'
import { withQuery } from '../shared/redirect.js'

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
    if (!callbackURL || !(err instanceof AppError) || err.code !== 'INVALID_TOKEN') throw err
    return reply.redirect(withQuery(callbackURL, { error: invalidTokenError }), 302)
  }
  return callbackURL ? reply.redirect(callbackURL, 302) : answer
}
