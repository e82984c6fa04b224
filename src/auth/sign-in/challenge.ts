// The second-factor challenge of a sign-in: once a first factor that was not a passkey passed, a
// session at once, a trusted device's pass, or a challenge for the second factor (two-factor's
// verify routes answer it, src/auth/two-factor/service.ts). The step every sign-in takes (step.ts)
// asks it, so no way in can skip it.
import type { DB } from '../../../db/index.js'
import { recordUserEvent } from '../../shared/audit.js'
import type { Clock } from '../../shared/clock.js'
import type { RequestContext } from '../../shared/context.js'
import { findUserById } from '../../user/queries.js'
import { type SecondFactor, secondFactorsOf } from '../session/second-factor.js'
import { consumeTrustedDevice, issueChallenge, issueTrustedDevice, type PendingLink } from '../links/challenges.js'
import type { CheckedCredential } from '../session/sessions.js'
import { CHALLENGE_TTL_MS, TRUSTED_DEVICE_TTL_MS } from './two-factor-cookies.js'

interface ChallengeDeps {
  db: DB
  clock: Clock
}

export type SignInStep =
  /** Start the session; `trustedDevice`: the new trusted-device token (rotated), or null to clear a stale one. */
  | { kind: 'session'; twoFactorVerified: boolean; trustedDevice?: string | null }
  /**
   * No session yet: the second factors that may follow (better-auth's `twoFactorMethods`), and the
   * challenge token for the `two_factor` cookie (TOTP), or null when only a passkey sign-in can follow.
   */
  | { kind: 'challenge'; token: string | null; methods: SecondFactor[]; trustedDevice?: null }

/**
 * What a correct first factor that was not a passkey leads to: a session at once when the account
 * has no second factor, or TOTP on and this browser is a trusted device of the user (its token is
 * replaced); else the second step (docs/http-contract.md, "Recovery"). The second factors are read
 * now: one added after this read raises the credential epoch, and the session is not born.
 */
export async function beginSignIn(
  deps: ChallengeDeps,
  ctx: RequestContext,
  input: {
    credential: CheckedCredential
    method: string
    rememberMe: boolean
    trustedDevice: string | null
    /** A provider login to link once the second factor passed: kept with the challenge. */
    link?: PendingLink
  },
): Promise<SignInStep> {
  const { userId } = input.credential
  const user = await findUserById(deps.db, userId)
  const methods = user ? await secondFactorsOf(deps.db, user) : []
  if (methods.length === 0) return { kind: 'session', twoFactorVerified: false }
  // A passkey is a sign-in of its own: nothing to carry from this one but the question.
  if (!methods.includes('totp')) return { kind: 'challenge', token: null, methods }
  const now = deps.clock.now()
  if (input.trustedDevice) {
    const token = input.trustedDevice
    const renewed = await deps.db.transaction().execute(async (trx) => {
      if (!(await consumeTrustedDevice(trx, token, userId, now))) return null
      return issueTrustedDevice(trx, userId, new Date(now.getTime() + TRUSTED_DEVICE_TTL_MS))
    })
    if (renewed) {
      await recordUserEvent(deps.db, ctx, userId, 'auth.two_factor.trusted_device_used')
      // That browser passed a second factor earlier: the session counts as having passed one.
      return { kind: 'session', twoFactorVerified: true, trustedDevice: renewed }
    }
  }
  const challenge = {
    userId,
    rememberMe: input.rememberMe,
    epoch: input.credential.epoch,
    method: input.method,
    ...(input.link ? { link: input.link } : {}),
  }
  const token = await issueChallenge(deps.db, challenge, new Date(now.getTime() + CHALLENGE_TTL_MS))
  return { kind: 'challenge', token, methods, ...(input.trustedDevice ? { trustedDevice: null } : {}) }
}

/** A new trusted device for the user, after a second factor passed with `trustDevice: true`. */
export function trustDevice(deps: ChallengeDeps, userId: string): Promise<string> {
  return issueTrustedDevice(deps.db, userId, new Date(deps.clock.now().getTime() + TRUSTED_DEVICE_TTL_MS))
}
