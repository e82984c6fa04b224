// The step every sign-in takes once its first factor passed (a password, the identity provider's
// answer): a session at once, or, with two-factor on and no trusted device, a challenge for the
// second factor. And the one place that turns either outcome into cookies on the reply.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { DB, Trx } from '../../../db/index.js'
import type { Config } from '../../config.js'
import type { Clock } from '../../shared/clock.js'
import type { RequestContext } from '../../shared/context.js'
import type { DeviceCookie, KnownDevices } from '../security/devices.js'
import type { SecondFactor } from '../session/second-factor.js'
import { completePendingLink, type PendingLink } from './provider-link.js'
import type { SecurityNotices } from '../security/notices.js'
import type { TwoFactorCookies } from './two-factor-cookies.js'
import type { GuestCookie } from './guest-cookie.js'
import { beginSignIn } from './challenge.js'
import { adoptGuest, GUEST_METHOD } from './adopt-guest.js'
import { cookieAttributes } from '../session/cookie-attributes.js'
import type { SessionCookie } from '../session/cookies.js'
import { startSession } from '../session/service.js'
import type { CheckedCredential, SessionManager } from '../session/sessions.js'
import type { LoginMethod, SessionView } from '../session/types.js'

export interface SignInDeps {
  db: DB
  clock: Clock
  sessions: SessionManager
  /** A browser the account has not used before is mailed about (src/auth/security/devices.ts). */
  devices: KnownDevices
  /** A provider login linked at the session's birth is mailed about (sign-in/provider-link.ts). */
  notices: SecurityNotices
}

/** The sign-in step's dependencies, from the app's decorations (src/auth/plugin.ts). */
export const signInDepsOf = (app: FastifyInstance): SignInDeps => ({
  db: app.db,
  clock: app.clock,
  sessions: app.sessions,
  devices: app.knownDevices,
  notices: app.securityNotices,
})

/** What the browser brought: the session it may already hold (it ends) and its trusted-device token. */
export interface BrowserState {
  replacing: string | null
  trustedDevice: string | null
  /** The ids of its `insight.device` cookie (one per account it signed in to; none without one). */
  devices: string[]
  /**
   * The guest it is signed in as (its session validated on this request) when this browser made it
   * (guest-cookie.ts), or null: what the guest made moves to the account this sign-in proves, in the
   * session's own transaction (src/auth/guests/). A guest session the browser holds without having
   * made it (planted) is ended as any other session a sign-in replaces, and nothing moves.
   */
  guest: string | null
}

export type { LoginMethod }

export type SignInOutcome =
  /** Signed in. `trustedDevice`: the rotated trusted-device token, or null to clear a stale one. */
  | {
      kind: 'session'
      token: string
      session: SessionView
      rememberMe: boolean
      method: LoginMethod
      /** The browser's device ids, for its `insight.device` cookie. */
      devices: string[]
      trustedDevice?: string | null
    }
  /**
   * A second factor is awaited, no session: the factors that may follow (`twoFactorMethods`) and the
   * challenge token for the `two_factor` cookie (null when only a passkey sign-in can follow).
   */
  | { kind: 'challenge'; token: string | null; methods: SecondFactor[]; trustedDevice?: null }

/** A session for a credential that needs no further step: a sign-up, or a second factor just passed. */
export async function signInWith(
  deps: SignInDeps,
  ctx: RequestContext,
  input: {
    credential: CheckedCredential
    method: LoginMethod
    rememberMe: boolean
    browser: BrowserState
    twoFactorVerified?: boolean
    /** A provider login that waited for the second factor: linked with the session, or neither is. */
    link?: PendingLink
  },
): Promise<Extract<SignInOutcome, { kind: 'session' }>> {
  const { credential, method, rememberMe, twoFactorVerified, link } = input
  const { guest } = input.browser
  const { token, session, alongside } = await startSession(
    deps,
    ctx,
    // A guest's session ends with the guest, in the transaction below: a sign-in that fails leaves it whole.
    { credential, method, rememberMe, replacing: guest ? null : input.browser.replacing, twoFactorVerified },
    async (trx: Trx) => {
      // The one place a guest becomes an account: at the birth of the session of what the browser just proved.
      if (guest) await adoptGuest(trx, ctx, guest, credential.userId)
      return {
        remembered: await deps.devices.remember(trx, credential.userId, input.browser.devices),
        linked: link ? await completePendingLink(trx, deps, ctx, credential.userId, link) : undefined,
      }
    },
  )
  const { remembered, linked } = alongside!
  linked?.()
  await deps.devices.tellIfNew(ctx, credential.userId, remembered)
  return { kind: 'session', token, session, rememberMe, method, devices: remembered.devices }
}

/**
 * After a correct first factor that was not a passkey (a password, a mailbox proof, the identity
 * provider): the session, or, when the user has a second factor (TOTP, unless this browser is one of
 * their trusted devices, or a passkey), the second step. Whatever session the browser held ends
 * either way: a sign-in replaces it, and a verify-totp must not find another user's session.
 */
export async function afterFirstFactor(
  deps: SignInDeps,
  ctx: RequestContext,
  input: {
    user: { id: string; credentialEpoch: number }
    method: LoginMethod
    rememberMe: boolean
    browser: BrowserState
    /** A provider login to link once the second factor passed (sign-in/provider-link.ts). */
    link?: PendingLink
  },
): Promise<SignInOutcome> {
  const { user, method, rememberMe, browser, link } = input
  const credential = { userId: user.id, epoch: user.credentialEpoch }
  const step = await beginSignIn(deps, ctx, {
    credential,
    method,
    rememberMe,
    trustedDevice: browser.trustedDevice,
    link,
  })
  if (step.kind === 'challenge') {
    // A guest's session stays until the second step passes: only then does its data move (signInWith).
    if (browser.replacing && !browser.guest) await deps.sessions.revokeByToken(browser.replacing)
    return step
  }
  const signedIn = await signInWith(deps, ctx, {
    credential,
    method,
    rememberMe,
    browser,
    twoFactorVerified: step.twoFactorVerified,
    link,
  })
  return { ...signedIn, trustedDevice: step.trustedDevice }
}

/**
 * better-auth's last-login-method cookie: the method of the last sign-in, readable by the page
 * (`lastLoginMethodClient().getLastUsedLoginMethod()`), 30 days. It names a method, never an account.
 */
export const LAST_LOGIN_METHOD_COOKIE = 'better-auth.last_used_login_method'
const LAST_LOGIN_METHOD_MAX_AGE = 30 * 24 * 60 * 60

/** The cookies of a sign-in: the one place that reads what the browser brought and sets what it gets. */
export class SignInCookies {
  constructor(
    private readonly session: SessionCookie,
    private readonly twoFactor: TwoFactorCookies,
    private readonly device: DeviceCookie,
    private readonly guest: GuestCookie,
    private readonly config: Config['auth'],
  ) {}

  browserOf(request: FastifyRequest): BrowserState {
    return {
      replacing: this.session.read(request),
      trustedDevice: this.twoFactor.trustedDevice.read(request),
      devices: this.device.read(request),
      guest: this.guestOf(request),
    }
  }

  /** The guest the request's session is, when this browser made it (its guest cookie names it); else null. */
  private guestOf(request: FastifyRequest): string | null {
    const user = request.user
    return user?.isAnonymous && this.guest.read(request) === user.id ? user.id : null
  }

  /** The browser that just proved the mailbox or the password is the account's one known device (devices.ts). */
  setDevices(reply: FastifyReply, devices: readonly string[]): void {
    this.device.set(reply, devices)
  }

  set(request: FastifyRequest, reply: FastifyReply, outcome: SignInOutcome): void {
    if (outcome.trustedDevice) this.twoFactor.trustedDevice.set(reply, outcome.trustedDevice)
    else if (outcome.trustedDevice === null) this.twoFactor.trustedDevice.clear(reply)
    if (outcome.kind === 'session') {
      this.session.set(reply, outcome.token, { rememberMe: outcome.rememberMe, expiresAt: outcome.session.expiresAt })
      this.device.set(reply, outcome.devices)
      // A guest proved no way in: "last time you used ..." keeps the browser's last real one.
      if (outcome.method === GUEST_METHOD) {
        this.guest.set(reply, outcome.session.userId)
        return
      }
      if (this.guest.read(request) !== null) this.guest.clear(reply)
      reply.setCookie(LAST_LOGIN_METHOD_COOKIE, outcome.method, {
        ...cookieAttributes(this.config),
        httpOnly: false,
        maxAge: LAST_LOGIN_METHOD_MAX_AGE,
      })
      return
    }
    // A guest's cookie stays for the second step (afterFirstFactor), when the guest is this browser's.
    if (this.session.present(request) && !this.guestOf(request)) this.session.clear(reply)
    if (outcome.token) this.twoFactor.challenge.set(reply, outcome.token)
    else if (this.twoFactor.challenge.present(request)) this.twoFactor.challenge.clear(reply)
  }
}
