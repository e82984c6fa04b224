// The devices an account signs in from. A device is a browser holding the `insight.device` cookie:
// a random id, signed with AUTH_SECRET, HttpOnly, kept 400 days (the most a browser keeps one) and
// sent back at every sign-in. The account remembers SHA-256 of its own id and the device's id, so a
// sign-in from a browser the account has not used before is told apart, and mailed to its owner.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DB } from '../../../db/index.js'
import type { Config } from '../../config.js'
import type { Clock } from '../../shared/clock.js'
import { contextOf } from '../../shared/context.js'
import { cookieAttributes, cookieName, readSignedCookie } from '../cookies.js'
import { hashToken, newToken } from '../tokens.js'
import type { SecurityNotices } from './notices.js'
import { rememberDevice, signedInBefore } from './queries.js'

const DEVICE_COOKIE_MAX_AGE_S = 400 * 24 * 60 * 60

export class KnownDevices {
  private readonly cookieName: string

  constructor(private readonly deps: { db: DB; clock: Clock; notices: SecurityNotices; config: Config['auth'] }) {
    this.cookieName = cookieName(deps.config, 'insight.device')
  }

  /**
   * After a session started for `userId` in this browser: the browser is remembered for the account
   * (its cookie is set, or renewed), and one the account had not used before is mailed about. Not on
   * the account's first sign-in (at sign-up): there is no other device to tell it from.
   */
  async signedIn(request: FastifyRequest, reply: FastifyReply, userId: string): Promise<void> {
    const deviceId = readSignedCookie(request, this.cookieName) ?? newToken()
    reply.setCookie(this.cookieName, deviceId, {
      ...cookieAttributes(this.deps.config),
      signed: true,
      maxAge: DEVICE_COOKIE_MAX_AGE_S,
    })
    const { db, clock, notices } = this.deps
    // Per account: the same browser is a different row for each account, and the rows do not show it.
    const isNew = await rememberDevice(db, userId, hashToken(`${userId}:${deviceId}`), clock.now())
    if (!isNew || !(await signedInBefore(db, userId))) return
    const mail = await notices.prepare(db, contextOf(request), userId, 'new_device')
    mail()
  }
}
