// Signing in by a code sent to a phone number (better-auth's phoneNumber plugin, PHONE_SIGN_IN). A
// number is a way in only once it is an account's and verified, and it becomes one only by a code
// typed in a fresh session of that account (`attachNumber`): nobody signs up by phone, and a number
// signs in to the one account that proved it. The codes are links/codes.ts's (HMAC-stored, five
// minutes, three tries), keyed by the number; a sign-in by one is a first factor that the one sign-in
// step completes (sign-in/step.ts: the second factor, the session's birth). A take-back and "this
// wasn't me" remove the number with the other ways in (core/queries.ts, forgetPhoneNumber).
import { z } from 'zod'
import type { DB, Executor, Trx } from '../../../db/index.js'
import { recordUserEvent } from '../../shared/audit.js'
import type { Clock } from '../../shared/clock.js'
import type { RequestContext } from '../../shared/context.js'
import { AppError } from '../../shared/errors.js'
import { findUserById, lockUser, readUser } from '../../user/queries.js'
import type { UserWithFlags } from '../../user/types.js'
import { banHolds, bannedUser } from '../core/ban.js'
import { type CodeStore, invalidCode } from '../links/codes.js'
import { assertFresh } from '../session/fresh.js'
import type { PhoneSender } from './sender.js'

export interface PhoneDeps {
  db: DB
  clock: Clock
  codes: CodeStore
  sender: PhoneSender
}

/** How a phone sign-in is named in the audit trail and the last-login-method cookie. */
export const PHONE_METHOD = 'phone-number'

/** E.164: '+', a country code not starting with 0, 8 to 15 digits in all (the migration checks it too). */
export const PhoneNumber = z.string().regex(/^\+[1-9]\d{7,14}$/)

export const invalidPhoneNumber = () => new AppError(400, 'INVALID_PHONE_NUMBER', 'Invalid phone number')
export const numberTaken = () => new AppError(400, 'PHONE_NUMBER_EXIST', 'Phone number already exists')

/** The number in E.164, or INVALID_PHONE_NUMBER (better-auth's answer to a number its validator refuses). */
export function e164(phoneNumber: string): string {
  const parsed = PhoneNumber.safeParse(phoneNumber)
  if (!parsed.success) throw invalidPhoneNumber()
  return parsed.data
}

/** The account whose verified number this is. */
const ownerOf = async (db: Executor, phoneNumber: string) => (await readUser(db, { phoneNumber }, ['id']))?.id

/**
 * phone-number/send-otp: a code for the number, sent when someone can use it: to sign in to the
 * account that has the number, or to attach it to the account signed in (`signedInAs`). Otherwise
 * the same work and nothing sent (no text to a number nobody asked to attach: a stranger cannot
 * make the service pay for texts to anyone). The answer is the same either way.
 */
export async function sendPhoneCode(deps: PhoneDeps, phoneNumber: string, signedInAs: string | null): Promise<void> {
  const userId = (await ownerOf(deps.db, phoneNumber)) ?? signedInAs
  const code = await deps.codes.issue(deps.db, 'phone-code', phoneNumber, userId, deps.clock.now())
  if (userId) await deps.sender.send(phoneNumber, code)
}

/** Uses the number's code, then `act`s in the code's transaction, `lockFirst` taking the account's row first. */
function useCode<T>(
  deps: PhoneDeps,
  input: { phoneNumber: string; code: string },
  steps: { lockFirst: (trx: Trx) => Promise<unknown>; act: (trx: Trx, codeFor: string | null) => Promise<T> },
): Promise<T> {
  const now = () => deps.clock.now()
  return deps.codes.use(deps.db, { purpose: 'phone-code', email: input.phoneNumber, code: input.code, now }, steps)
}

/**
 * phone-number/verify: the code proves the number; the account with that verified number is the one
 * signing in (its row locked, its ban checked), to be completed by the sign-in step. A number no
 * account has verified, or one that moved since its code was sent, is INVALID_OTP: nothing says
 * whether a number has an account.
 */
export async function signInWithPhoneCode(
  deps: PhoneDeps,
  ctx: RequestContext,
  input: { phoneNumber: string; code: string },
): Promise<UserWithFlags> {
  let owner: string | undefined
  return useCode(deps, input, {
    lockFirst: async (trx) => {
      owner = await ownerOf(trx, input.phoneNumber)
      if (owner) await lockUser(trx, { id: owner }, ['id'])
    },
    act: async (trx, codeFor) => {
      // Read again under the lock: the number may have moved while we waited for it.
      if (!owner || codeFor !== owner || (await ownerOf(trx, input.phoneNumber)) !== owner) throw invalidCode()
      if (await banHolds(trx, ctx, owner, deps.clock.now())) throw bannedUser()
      return (await findUserById(trx, owner))!
    },
  })
}

/**
 * phone-number/verify with updatePhoneNumber: the code, sent while this account was signed in,
 * proves the number, which becomes the account's (verified) way in. A new way in needs a fresh
 * session, as a passkey does (session/fresh.ts). PHONE_NUMBER_EXIST when another account has it.
 */
export async function attachNumber(
  deps: PhoneDeps,
  ctx: RequestContext,
  session: { userId: string; createdAt: Date },
  input: { phoneNumber: string; code: string },
): Promise<UserWithFlags> {
  assertFresh(deps.clock, session)
  const { userId } = session
  try {
    return await useCode(deps, input, {
      lockFirst: (trx) => lockUser(trx, { id: userId }, ['id']),
      act: async (trx, codeFor) => {
        const owner = await ownerOf(trx, input.phoneNumber)
        if (owner && owner !== userId) throw numberTaken()
        if (codeFor !== userId) throw invalidCode()
        await trx
          .updateTable('user')
          .set({ phone_number: input.phoneNumber, phone_number_verified: true, updated_at: deps.clock.now() })
          .where('id', '=', userId)
          .execute()
        await recordUserEvent(trx, ctx, userId, 'auth.phone_number_added')
        return (await findUserById(trx, userId))!
      },
    })
  } catch (err) {
    // Another account attached the number meanwhile (its unique index).
    if ((err as { code?: string }).code === '23505') throw numberTaken()
    throw err
  }
}

/** The account's number, as better-auth's user carries it. */
export async function phoneOf(db: DB, userId: string): Promise<{ phoneNumber: string | null; phoneNumberVerified: boolean }> {
  const row = await db
    .selectFrom('user')
    .select(['phone_number', 'phone_number_verified'])
    .where('id', '=', userId)
    .executeTakeFirstOrThrow()
  return { phoneNumber: row.phone_number, phoneNumberVerified: row.phone_number_verified }
}
