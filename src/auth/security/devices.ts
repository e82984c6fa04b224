// The devices an account signs in from. A device is a browser holding the `insight.device` cookie:
// a random id, signed with AUTH_SECRET, HttpOnly, kept 400 days (the most a browser keeps one) and
// sent back at every sign-in. The account remembers SHA-256 of its own id and the device's id, so a
// sign-in from a browser the account has not used before is told apart, and mailed to its owner.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DB } from '../../../db/index.js'
import type { Config } from '../../config.js'
import type { Clock } from '../../shared/clock.js'
import type { RequestContext } from '../../shared/context.js'
import { cookieAttributes, cookieName, readSignedCookie } from '../session/cookie-attributes.js'
import { hashToken, newToken } from '../session/tokens.js'
import type { SecurityNotices } from './notices.js'
import { findUserByEmail } from '../../user/queries.js'
import { isKnownDevice, rememberDevice, signedInBefore } from './queries.js'

const DEVICE_COOKIE_MAX_AGE_S = 400 * 24 * 60 * 60

/** The `insight.device` cookie (session/sign-in.ts reads it with what the browser brought, and sets it with a session). */
export class DeviceCookie {
  private readonly name: string

  constructor(private readonly config: Config['auth']) {
    this.name = cookieName(config, 'insight.device')
  }

  read(request: FastifyRequest): string | null {
    return readSignedCookie(request, this.name)
  }

  set(reply: FastifyReply, deviceId: string): void {
    reply.setCookie(this.name, deviceId, { ...cookieAttributes(this.config), signed: true, maxAge: DEVICE_COOKIE_MAX_AGE_S })
  }
}

export class KnownDevices {
  constructor(private readonly deps: { db: DB; clock: Clock; notices: SecurityNotices }) {}

  /**
   * After a session started for `userId` on the browser with device id `deviceId` (null: it has
   * none yet): the device is remembered for the account, and one the account had not used before
   * is mailed about, but not on the account's first sign-in (at sign-up): there is no other device
   * to tell it from. Returns the device id for the cookie.
   */
  async signedIn(ctx: RequestContext, userId: string, deviceId: string | null): Promise<string> {
    const id = deviceId ?? newToken()
    const { db, clock, notices } = this.deps
    try {
      // Per account: the same browser is a different row for each account, and the rows do not show it.
      const isNew = await rememberDevice(db, userId, hashToken(`${userId}:${id}`), clock.now())
      if (isNew && (await signedInBefore(db, userId))) {
        const mail = await notices.prepare(db, ctx, userId, 'new_device')
        mail()
      }
    } catch (err) {
      // The account was deleted after its session started (the session went with it): there is
      // nothing to remember and nobody to tell.
      if ((err as { code?: string }).code !== '23503') throw err
    }
    return id
  }

  /**
   * Whether the browser with device id `deviceId` has signed in to the account of `email`: mail it
   * asks for to that address is then its owner asking (the mail budget lets it past the address's
   * cap). Two lookups whether the account exists or not, so the answer's time does not tell.
   */
  async signedInTo(deviceId: string | null, email: string): Promise<boolean> {
    if (!deviceId) return false
    const user = await findUserByEmail(this.deps.db, email)
    const userId = user?.id ?? ''
    const known = await isKnownDevice(this.deps.db, userId, hashToken(`${userId}:${deviceId}`))
    return user !== undefined && known
  }
}
