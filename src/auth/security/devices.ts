// The devices an account signs in from. A device is a browser holding the `insight.device` cookie:
// signed with AUTH_SECRET, HttpOnly, kept 400 days (the most a browser keeps one). It holds one
// random id per account the browser signed in to (at most MAX_ACCOUNTS, newest first), and the
// account remembers SHA-256 of its own id and that id, so an id is bound to one account and the
// rows do not show that two accounts share a browser. Each sign-in rotates the account's id: a
// copy of the cookie taken before stops counting once its browser signs in again.
//
// A known device is mailed about no more (a sign-in from any other is: notices.ts), and has
// allowances of its own (plugins/rate-limit.ts): its right password is never refused because
// strangers guessed, and its mail is not held to the address's cap. So the list is forgotten
// whenever the account is secured against whoever held it: a take-back, "this wasn't me", a
// password reset or change and a ban delete every row, in the transaction that ends the sessions
// (under the user row's lock, which a sign-in share-locks to remember its device: the two
// serialise). A reset or change keeps the one browser that completed it: it proved the mailbox or
// the password.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DB, Executor } from '../../../db/index.js'
import type { Config } from '../../config.js'
import type { Clock } from '../../shared/clock.js'
import type { RequestContext } from '../../shared/context.js'
import { findUserByEmail } from '../../user/queries.js'
import { cookieAttributes, cookieName, readSignedCookie } from '../session/cookie-attributes.js'
import { hashToken, newToken } from '../core/tokens.js'
import type { SecurityNotices } from './notices.js'
import { forgetKnownDevices, insertKnownDevice, knownDeviceOf, moveKnownDevice, signedInBefore } from './queries.js'

const DEVICE_COOKIE_MAX_AGE_S = 400 * 24 * 60 * 60
/** Accounts one browser stays known to; past it, the one it signed in to longest ago is dropped. */
const MAX_ACCOUNTS = 5
const ID = /^[A-Za-z0-9_-]{43}$/

/** The `insight.device` cookie: the browser's device ids, one per account, newest first. */
export class DeviceCookie {
  private readonly name: string

  constructor(private readonly config: Config['auth']) {
    this.name = cookieName(config, 'insight.device')
  }

  read(request: FastifyRequest): string[] {
    const value = readSignedCookie(request, this.name)
    return value
      ? value
          .split('.')
          .filter((id) => ID.test(id))
          .slice(0, MAX_ACCOUNTS)
      : []
  }

  set(reply: FastifyReply, ids: readonly string[]): void {
    reply.setCookie(this.name, ids.join('.'), {
      ...cookieAttributes(this.config),
      signed: true,
      maxAge: DEVICE_COOKIE_MAX_AGE_S,
    })
  }
}

/** The browser's ids after `fresh` replaced the id `used` (or was added): the cookie's new value. */
const rotated = (ids: readonly string[], fresh: string, used?: string) =>
  [fresh, ...ids.filter((id) => id !== used)].slice(0, MAX_ACCOUNTS)

/** What a sign-in did to the browser's device: its ids for the cookie, and whether the account had not seen it. */
export interface Remembered {
  devices: string[]
  isNew: boolean
}

export class KnownDevices {
  constructor(private readonly deps: { db: DB; clock: Clock; notices: SecurityNotices }) {}

  private hashOf(userId: string, id: string): string {
    return hashToken(`${userId}:${id}`)
  }

  /** The id of `ids` that the account remembers, with its row's hash. */
  private async match(db: Executor, userId: string, ids: readonly string[]): Promise<{ id: string; hash: string } | undefined> {
    const hashes = ids.map((id) => this.hashOf(userId, id))
    const hash = await knownDeviceOf(db, userId, hashes)
    return hash === undefined ? undefined : { id: ids[hashes.indexOf(hash)]!, hash }
  }

  /**
   * A session for `userId` starts on the browser holding `ids`: in the session's transaction, with
   * the user row share-locked (sessions.ts), the account's id of that browser rotates, or the
   * browser is remembered as new.
   */
  async remember(trx: Executor, userId: string, ids: readonly string[]): Promise<Remembered> {
    const now = this.deps.clock.now()
    const fresh = newToken()
    const known = await this.match(trx, userId, ids)
    const hash = this.hashOf(userId, fresh)
    // Two sign-ins of one browser at once: the second finds the id the first just rotated away.
    const moved = known !== undefined && (await moveKnownDevice(trx, userId, known.hash, hash, now))
    if (!moved) await insertKnownDevice(trx, userId, hash, now)
    return { devices: rotated(ids, fresh, known?.id), isNew: !known }
  }

  /**
   * Once the sign-in is recorded: a device the account had not used is mailed about, but not on
   * the account's first sign-in (at sign-up): there is no other device to tell it from.
   */
  async tellIfNew(ctx: RequestContext, userId: string, remembered: Remembered): Promise<void> {
    const { db, notices } = this.deps
    if (!remembered.isNew) return
    try {
      if (!(await signedInBefore(db, userId))) return
      const mail = await notices.prepare(db, ctx, userId, 'new_device')
      mail()
    } catch (err) {
      // The account was deleted after its session started (the session went with it): there is
      // nobody to tell.
      if ((err as { code?: string }).code !== '23503') throw err
    }
  }

  /**
   * In the transaction that secures the account, its user row locked: every device is forgotten
   * but the browser holding `keep` (the one that just proved the mailbox or the password), which
   * becomes the account's one known browser. Returns that browser's ids for its cookie.
   */
  async forgetAllBut(trx: Executor, userId: string, keep: readonly string[]): Promise<string[]> {
    const own = await this.match(trx, userId, keep)
    await forgetKnownDevices(trx, userId)
    const fresh = newToken()
    await insertKnownDevice(trx, userId, this.hashOf(userId, fresh), this.deps.clock.now())
    return rotated(keep, fresh, own?.id)
  }

  /**
   * The id of the account of `email` when it remembers the browser holding `ids` (that browser's
   * sign-in and mail budgets: plugins/rate-limit.ts); else null. Two lookups whether the account
   * exists or not, so the answer's time does not tell.
   */
  async accountKnowing(ids: readonly string[], email: string): Promise<string | null> {
    if (ids.length === 0) return null
    const user = await findUserByEmail(this.deps.db, email)
    const known = await this.match(this.deps.db, user?.id ?? '', ids)
    return user !== undefined && known ? user.id : null
  }
}
