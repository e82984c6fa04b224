// Passkeys: adding one (a fresh session required), signing in with one, and renaming or removing
// one's own. Rules of better-auth's passkey plugin, made stricter: user verification is required
// (so a passkey sign-in is two factors: something held and something known or been), the signature
// counter must move forward while non-zero, the assertion must carry back the user handle the
// passkey was given, the relying party's origins are a fixed list (never the request's own Origin),
// and a banned user gets nothing.
import { randomBytes } from 'node:crypto'
import type {
  AuthenticatorTransportFuture,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
} from '@simplewebauthn/server'
import type { z } from 'zod'
import type { DB } from '../../../db/index.js'
import type { Config } from '../../config.js'
import { recordUserEvent } from '../../shared/audit.js'
import type { Clock } from '../../shared/clock.js'
import type { RequestContext } from '../../shared/context.js'
import { AppError, unauthorized } from '../../shared/errors.js'
import { bannedUser, banHolds } from '../core/ban.js'
import { countPasskeys, endSessionsOfUser, raiseCredentialEpoch } from '../core/queries.js'
import { assertEmailProven, lockProvenSession } from '../session/second-factor.js'
import { lockUser } from '../../user/queries.js'
import { type Ceremony, type CeremonyChallenge, consumeCeremonyChallenge, issueCeremonyChallenge } from '../links/challenges.js'
import type { UserWithFlags } from '../../user/types.js'
import type { SecurityNotices } from '../security/notices.js'
import type { CheckedCredential } from '../session/sessions.js'
import { assertFresh } from '../session/fresh.js'
import type { SessionState } from '../session/types.js'
import {
  deletePasskeyOf,
  findPasskeyForSignIn,
  insertPasskey,
  passkeysOf,
  recordUse,
  renamePasskey,
  type Passkey,
  type StoredPasskey,
} from './queries.js'
import type { AuthenticationResponse, RegistrationResponse } from './schemas.js'

export interface PasskeyDeps {
  db: DB
  clock: Clock
  relyingParty: Config['auth']['passkey']
  notices: SecurityNotices
}

/** A ceremony's challenge lives as long as better-auth's (its cookie's max age): 5 minutes. */
export const CHALLENGE_TTL_MS = 5 * 60 * 1000
/** Passkeys per account: enough for every device a person owns, and a bound on what one account can store. */
export const MAX_PASSKEYS = 20
/** The relying party's name an authenticator shows. */
export const RP_NAME = 'Insight'

/** The WebAuthn library (a large module graph), loaded by the first ceremony rather than at start-up. */
const webauthn = () => import('@simplewebauthn/server')

// better-auth's codes and messages, so its client's error handling reads them unchanged.
const challengeNotFound = () => new AppError(400, 'CHALLENGE_NOT_FOUND', 'Challenge not found')
const notAllowed = () =>
  new AppError(401, 'YOU_ARE_NOT_ALLOWED_TO_REGISTER_THIS_PASSKEY', 'You are not allowed to register this passkey')
const registrationFailed = () => new AppError(400, 'FAILED_TO_VERIFY_REGISTRATION', 'Failed to verify registration')
const authenticationFailed = () => new AppError(401, 'AUTHENTICATION_FAILED', 'Authentication failed')
/** An unknown passkey and another user's answer alike, so ids cannot be probed. */
export const passkeyNotFound = (status = 404) => new AppError(status, 'PASSKEY_NOT_FOUND', 'Passkey not found')
const tooMany = () =>
  new AppError(400, 'TOO_MANY_PASSKEYS', `An account holds at most ${MAX_PASSKEYS} passkeys: remove one first`)

/** The passkey as its owner sees it: never the user handle. */
export function toPasskeyJson(p: StoredPasskey): Passkey {
  const { userHandle: _, ...shown } = p
  return shown
}

const challengeExpiry = (deps: PasskeyDeps) => new Date(deps.clock.now().getTime() + CHALLENGE_TTL_MS)
const transportsOf = (p: StoredPasskey) =>
  p.transports ? (p.transports.split(',') as AuthenticatorTransportFuture[]) : undefined

/** The options of a new passkey for the signed-in user, and the token of its challenge (the cookie's value). */
export async function registrationOptions(
  deps: PasskeyDeps,
  user: Pick<UserWithFlags, 'id' | 'email' | 'name'>,
  session: Pick<SessionState, 'id' | 'createdAt'>,
  query: { authenticatorAttachment?: 'platform' | 'cross-platform' },
): Promise<{ options: PublicKeyCredentialCreationOptionsJSON; token: string }> {
  assertFresh(deps.clock, session)
  // A passkey is a second factor: only a session that proved the address sets one up (second-factor.ts).
  await assertEmailProven(deps.db, { id: session.id, userId: user.id }, deps.clock.now())
  const existing = await passkeysOf(deps.db, user.id)
  if (existing.length >= MAX_PASSKEYS) throw tooMany()
  // One WebAuthn user id per account (the spec's advice: authenticators group its passkeys), random
  // so that it tells nothing about the account.
  const userHandle = existing[0]?.userHandle ?? randomBytes(32).toString('base64url')
  const options = await (await webauthn()).generateRegistrationOptions({
    rpName: RP_NAME,
    rpID: deps.relyingParty.rpId,
    userID: Buffer.from(userHandle, 'base64url'),
    // The account as a password manager lists it. better-auth puts the client's `name` here (the
    // passkey's name, also posted with verify-registration); the address tells accounts apart.
    userName: user.email,
    userDisplayName: user.name || user.email,
    attestationType: 'none',
    // The authenticators that already hold one of the account's passkeys refuse to make another.
    excludeCredentials: existing.map((p) => ({ id: p.credentialID, transports: transportsOf(p) })),
    authenticatorSelection: {
      residentKey: 'preferred',
      userVerification: 'required',
      ...(query.authenticatorAttachment ? { authenticatorAttachment: query.authenticatorAttachment } : {}),
    },
  })
  const token = await issue(deps, 'passkey-registration', { userId: user.id, challenge: options.challenge, userHandle })
  return { options, token }
}

const issue = (deps: PasskeyDeps, ceremony: Ceremony, challenge: CeremonyChallenge) =>
  issueCeremonyChallenge(deps.db, ceremony, challenge, challengeExpiry(deps))

/** The challenge of the browser's cookie, used up; 400 CHALLENGE_NOT_FOUND without a live one. */
async function takeChallenge(deps: PasskeyDeps, ceremony: Ceremony, token: string | null) {
  const challenge = token && (await consumeCeremonyChallenge(deps.db, ceremony, token, deps.clock.now()))
  if (!challenge) throw challengeNotFound()
  return challenge
}

/**
 * Adds the passkey the authenticator made for the signed-in user. Its challenge is used up whatever
 * comes of it; the passkey is stored, audited and noticed in one transaction that also finds the
 * session still live (a reset that ended it meanwhile leaves no passkey behind).
 */
export async function verifyRegistration(
  deps: PasskeyDeps,
  ctx: RequestContext,
  user: Pick<UserWithFlags, 'id'>,
  session: Pick<SessionState, 'id' | 'createdAt'>,
  token: string | null,
  body: { response: z.infer<typeof RegistrationResponse>; name?: string },
): Promise<Passkey> {
  assertFresh(deps.clock, session)
  const challenge = await takeChallenge(deps, 'passkey-registration', token)
  if (challenge.userId !== user.id || !challenge.userHandle) throw notAllowed()
  // Loaded before the try: a library that fails to load is a server error, not a refused passkey.
  const { verifyRegistrationResponse } = await webauthn()
  let verification: Awaited<ReturnType<typeof verifyRegistrationResponse>>
  try {
    verification = await verifyRegistrationResponse({
      response: { ...body.response, clientExtensionResults: body.response.clientExtensionResults ?? {} },
      expectedChallenge: challenge.challenge,
      expectedOrigin: deps.relyingParty.origins,
      expectedRPID: deps.relyingParty.rpId,
      requireUserVerification: true,
    })
  } catch (err) {
    ctx.log.info({ reason: (err as Error).message }, 'passkey registration refused')
    throw registrationFailed()
  }
  const info = verification.registrationInfo
  if (!verification.verified || !info) throw registrationFailed()
  const { passkey, notice } = await deps.db.transaction().execute(async (trx) => {
    // The user row first, the order of every writer of the account; then the session, still live and
    // still holding its proof of the address (second-factor.ts).
    if (!(await lockUser(trx, { id: user.id }, ['id']))) throw unauthorized()
    if (!(await lockProvenSession(trx, { id: session.id, userId: user.id }, deps.clock.now()))) throw unauthorized()
    if ((await countPasskeys(trx, user.id)) >= MAX_PASSKEYS) throw tooMany()
    const added = await insertPasskey(trx, {
      userId: user.id,
      name: body.name ?? null,
      credentialID: info.credential.id,
      publicKey: Buffer.from(info.credential.publicKey).toString('base64'),
      userHandle: challenge.userHandle!,
      counter: info.credential.counter,
      deviceType: info.credentialDeviceType,
      backedUp: info.credentialBackedUp,
      transports: (body.response.response.transports ?? []).join(','),
      aaguid: info.aaguid,
      createdAt: deps.clock.now(),
    })
    // The credential is registered already (to this account or another): nobody gets it twice.
    if (!added) throw registrationFailed()
    // A sign-in whose first factor passed before this cannot be born without the passkey (beginSignIn).
    await raiseCredentialEpoch(trx, user.id)
    await recordUserEvent(trx, ctx, user.id, 'auth.passkey.added', { passkeyId: added.id })
    return { passkey: added, notice: await deps.notices.prepare(trx, ctx, user.id, 'passkey_added') }
  })
  notice()
  return toPasskeyJson(passkey)
}

/**
 * The options of a sign-in: any passkey of the relying party (the browser offers the person's own),
 * or, for a signed-in user confirming it is them, only theirs.
 */
export async function authenticationOptions(
  deps: PasskeyDeps,
  signedInUserId: string | null,
): Promise<{ options: PublicKeyCredentialRequestOptionsJSON; token: string }> {
  const own = signedInUserId ? await passkeysOf(deps.db, signedInUserId) : []
  const options = await (await webauthn()).generateAuthenticationOptions({
    rpID: deps.relyingParty.rpId,
    userVerification: 'required',
    ...(own.length ? { allowCredentials: own.map((p) => ({ id: p.credentialID, transports: transportsOf(p) })) } : {}),
  })
  const token = await issue(deps, 'passkey-authentication', { userId: signedInUserId, challenge: options.challenge })
  return { options, token }
}

/**
 * Checks a sign-in's assertion: the challenge used up, the passkey and its user read together, the
 * signature, user verification, origin, relying party, counter and user handle, the ban. Returns
 * the credential a session may be born on (sessions.ts re-checks the epoch and the ban under lock).
 */
export async function verifyAuthentication(
  deps: PasskeyDeps,
  ctx: RequestContext,
  token: string | null,
  response: z.infer<typeof AuthenticationResponse>,
): Promise<{ credential: CheckedCredential; user: UserWithFlags }> {
  const challenge = await takeChallenge(deps, 'passkey-authentication', token)
  const found = await findPasskeyForSignIn(deps.db, response.id)
  if (!found) throw passkeyNotFound(401)
  const { passkey, user } = found
  const refuse = async (reason: string) => {
    await recordUserEvent(deps.db, ctx, user.id, 'auth.sign_in_failed', { method: 'passkey', reason })
    return authenticationFailed()
  }
  // Started by a signed-in user for their own passkeys: another's is not the answer asked for.
  if (challenge.userId !== null && challenge.userId !== user.id) throw await refuse('not the signed-in user')
  // A discoverable passkey names its user: it must be the handle this passkey was given. Without one,
  // only a ceremony that named the user beforehand can do (WebAuthn §7.2, step 6).
  const handle = response.response.userHandle
  if (handle !== undefined ? handle !== passkey.userHandle : challenge.userId !== user.id)
    throw await refuse('user handle mismatch')
  const { verifyAuthenticationResponse } = await webauthn()
  let verification: Awaited<ReturnType<typeof verifyAuthenticationResponse>>
  try {
    verification = await verifyAuthenticationResponse({
      response: { ...response, clientExtensionResults: response.clientExtensionResults ?? {} },
      expectedChallenge: challenge.challenge,
      expectedOrigin: deps.relyingParty.origins,
      expectedRPID: deps.relyingParty.rpId,
      credential: {
        id: passkey.credentialID,
        publicKey: new Uint8Array(Buffer.from(passkey.publicKey, 'base64')),
        counter: passkey.counter,
        transports: transportsOf(passkey),
      },
      // Also the counter: one that does not move forward while either is non-zero is refused (a cloned authenticator).
      requireUserVerification: true,
    })
  } catch (err) {
    ctx.log.info({ reason: (err as Error).message }, 'passkey sign-in refused')
    throw await refuse('assertion refused')
  }
  if (!verification.verified || !verification.authenticationInfo.userVerified) throw await refuse('assertion refused')
  const now = deps.clock.now()
  if (await banHolds(deps.db, ctx, user.id, now)) throw bannedUser()
  const counters = { was: passkey.counter, now: verification.authenticationInfo.newCounter }
  // Checked against the counter read; another sign-in with the same counter, or a removal, got there first.
  if (!(await recordUse(deps.db, passkey.id, counters, now))) throw await refuse('passkey changed meanwhile')
  return { credential: { userId: user.id, epoch: user.credentialEpoch }, user }
}

export async function listPasskeys(deps: PasskeyDeps, userId: string): Promise<Passkey[]> {
  return (await passkeysOf(deps.db, userId)).map(toPasskeyJson)
}

export async function renameOwnPasskey(
  deps: PasskeyDeps,
  ctx: RequestContext,
  userId: string,
  input: { id: string; name: string },
): Promise<Passkey> {
  return deps.db.transaction().execute(async (trx) => {
    const renamed = await renamePasskey(trx, userId, input.id, input.name)
    if (!renamed) throw passkeyNotFound()
    await recordUserEvent(trx, ctx, userId, 'auth.passkey.renamed', { passkeyId: renamed.id })
    return toPasskeyJson(renamed)
  })
}

/**
 * Removes one of the user's passkeys; the owner is mailed a notice. Like a change of password, it
 * ends every other session of the account (one may have come through that passkey) and every
 * sign-in in flight (the credential epoch rises); the session that removed it stays.
 */
export async function deleteOwnPasskey(
  deps: PasskeyDeps,
  ctx: RequestContext,
  userId: string,
  currentSessionId: string,
  id: string,
): Promise<void> {
  const notice = await deps.db.transaction().execute(async (trx) => {
    if (!(await lockUser(trx, { id: userId }, ['id']))) throw unauthorized()
    if (!(await deletePasskeyOf(trx, userId, id))) throw passkeyNotFound()
    const sessionsEnded = await endSessionsOfUser(trx, userId, { except: currentSessionId })
    await recordUserEvent(trx, ctx, userId, 'auth.passkey.removed', { passkeyId: id, sessionsEnded })
    return deps.notices.prepare(trx, ctx, userId, 'passkey_removed')
  })
  notice()
}
