// One-time codes, emailed (better-auth's email-otp) or sent to a phone number (its phoneNumber plugin,
// src/auth/phone/; the `email` below is then the number): six digits, five minutes, three wrong tries.
// A row of the `verification` table like every emailed link, keyed by the purpose and the address:
// its `token_hash` is HMAC(AUTH_SECRET, purpose and address), so one address has at most one live
// code per purpose and a new code replaces the last. The code itself is stored as an HMAC under
// the same key: a million codes are a second's work to hash, so a plain hash in a database dump
// would give them away; without the secret it gives nothing.
import { createHmac, randomInt, timingSafeEqual } from 'node:crypto'
import { sql } from 'kysely'
import { json, type DB, type Executor, type Trx } from '../../../db/index.js'
import { AppError } from '../../shared/errors.js'
import { newId } from '../../shared/ids.js'
import type { VerificationPurpose } from './verification.js'

export type CodePurpose = Extract<
  VerificationPurpose,
  'sign-in-code' | 'verify-email-code' | 'reset-password-code' | 'phone-code'
>

export const CODE_LIFETIME_MS = 5 * 60 * 1000
export const CODE_ATTEMPTS = 3
const CODE_DIGITS = 6

// better-auth's email-otp answers, by their codes.
export const invalidCode = () => new AppError(400, 'INVALID_OTP', 'Invalid OTP')
export const expiredCode = () => new AppError(400, 'OTP_EXPIRED', 'OTP expired')
export const tooManyAttempts = () => new AppError(403, 'TOO_MANY_ATTEMPTS', 'Too many attempts')

const mac = (secret: string, ...parts: string[]) => createHmac('sha256', secret).update(parts.join('\0')).digest('base64url')

export class CodeStore {
  /** `secret`: the first AUTH_SECRET (a code lives five minutes, so a rotation costs at most one code). */
  constructor(private readonly secret: string) {}

  private keyOf(purpose: CodePurpose, email: string): string {
    return mac(this.secret, 'code', purpose, email.toLowerCase())
  }

  /**
   * A new code for the address, replacing any live one of that purpose (its tries start again: the
   * per-address mail budget bounds how often). `userId` null: no account has the address (a sign-in
   * code that creates one, or a code nobody receives: the same work either way).
   */
  async issue(db: Executor, purpose: CodePurpose, email: string, userId: string | null, now: Date): Promise<string> {
    const code = String(randomInt(0, 10 ** CODE_DIGITS)).padStart(CODE_DIGITS, '0')
    const key = this.keyOf(purpose, email)
    const data = json({ code: mac(this.secret, key, code), attempts: 0 })
    const expiresAt = new Date(now.getTime() + CODE_LIFETIME_MS)
    await db
      .insertInto('verification')
      .values({ id: newId(), purpose, token_hash: key, user_id: userId, data, expires_at: expiresAt })
      .onConflict((oc) => oc.column('token_hash').doUpdateSet({ user_id: userId, data, expires_at: expiresAt }))
      .execute()
    return code
  }

  /** Whether the address has a live code of that purpose (to refuse before costly work, spending no try). */
  async isLive(db: Executor, purpose: CodePurpose, email: string, now: Date): Promise<boolean> {
    const row = await db
      .selectFrom('verification')
      .select('id')
      .where('token_hash', '=', this.keyOf(purpose, email))
      .where('purpose', '=', purpose)
      .where('expires_at', '>', now)
      .executeTakeFirst()
    return row !== undefined
  }

  /**
   * Uses the address's code, in the caller's transaction (the account's row locked first, when it
   * has one): the row is locked, so two tries at once are counted one after the other. A right code
   * is deleted (single use) and its account id returned (null: none had the address when it was
   * sent). A wrong one counts a try; the fourth try of a code is refused whatever it says, and ends
   * it. Throws INVALID_OTP, OTP_EXPIRED or TOO_MANY_ATTEMPTS; a wrong try is written even so, so
   * the caller must commit it: see `use`.
   */
  private async check(
    trx: Trx,
    purpose: CodePurpose,
    email: string,
    code: string,
    now: Date,
  ): Promise<{ ok: true; userId: string | null } | { ok: false; error: AppError }> {
    const key = this.keyOf(purpose, email)
    const row = await trx
      .selectFrom('verification')
      .select(['id', 'user_id', 'data', 'expires_at'])
      .where('token_hash', '=', key)
      .where('purpose', '=', purpose)
      .forUpdate()
      .executeTakeFirst()
    if (!row) return { ok: false, error: invalidCode() }
    const remove = () => trx.deleteFrom('verification').where('id', '=', row.id).execute()
    if (row.expires_at.getTime() <= now.getTime()) {
      await remove()
      return { ok: false, error: expiredCode() }
    }
    const attempts = typeof row.data.attempts === 'number' ? row.data.attempts : CODE_ATTEMPTS
    if (attempts >= CODE_ATTEMPTS) {
      await remove()
      return { ok: false, error: tooManyAttempts() }
    }
    const expected = Buffer.from(String(row.data.code ?? ''))
    const given = Buffer.from(mac(this.secret, key, code))
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
      await trx
        .updateTable('verification')
        .set({ data: sql<string>`jsonb_set(data, '{attempts}', to_jsonb(${attempts + 1}::int))` })
        .where('id', '=', row.id)
        .execute()
      return { ok: false, error: invalidCode() }
    }
    await remove()
    return { ok: true, userId: row.user_id }
  }

  /**
   * Checks the code in its own transaction and, when right, runs `act` in that same transaction
   * (the code is spent only if `act` commits). A wrong try commits its count and throws.
   * `lockFirst` runs before the code row is locked: the account's row, the order every writer of
   * the account takes.
   */
  async use<T>(
    db: DB,
    input: { purpose: CodePurpose; email: string; code: string; now: () => Date },
    steps: { lockFirst?: (trx: Trx) => Promise<unknown>; act: (trx: Trx, userId: string | null) => Promise<T> },
  ): Promise<T> {
    const outcome = await db.transaction().execute(async (trx) => {
      await steps.lockFirst?.(trx)
      const checked = await this.check(trx, input.purpose, input.email, input.code, input.now())
      if (!checked.ok) return checked
      return { ok: true as const, value: await steps.act(trx, checked.userId) }
    })
    if (!outcome.ok) throw outcome.error
    return outcome.value
  }
}
