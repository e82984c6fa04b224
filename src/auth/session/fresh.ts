// A fresh session: one started within better-auth's default freshAge (a day). Adding a way in
// (a passkey) and moving the account to another address need one, or the password: a session
// stolen from a browser long signed in must not be enough to keep the account for good.
import type { Clock } from '../../shared/clock.js'
import { AppError } from '../../shared/errors.js'

export const FRESH_AGE_MS = 24 * 60 * 60 * 1000

/** better-auth's code and message, so its client reads the refusal unchanged. */
export const notFresh = () => new AppError(403, 'SESSION_NOT_FRESH', 'Session is not fresh')

export const isFresh = (clock: Clock, session: { createdAt: Date }): boolean =>
  clock.now().getTime() - session.createdAt.getTime() < FRESH_AGE_MS

export function assertFresh(clock: Clock, session: { createdAt: Date }): void {
  if (!isFresh(clock, session)) throw notFresh()
}
