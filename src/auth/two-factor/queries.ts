// Two-factor authentication's SQL: the `two_factor` row of a user and their backup codes. Its sign-in
// challenges and trusted devices are `verification` rows, kept by the one store of that table
// (src/auth/links/challenges.ts).
import { sql } from 'kysely'
import type { Executor, Trx } from '../../../db/index.js'
import { deleteChallenges, deleteTrustedDevices } from '../links/challenges.js'

export interface TwoFactorRow {
  secret: string
  verified: boolean
  /** Sign-in with this second factor is refused until then (too many wrong codes in a row). */
  lockedUntil: Date | null
}

export async function findTwoFactor(db: Executor, userId: string): Promise<TwoFactorRow | undefined> {
  const row = await db
    .selectFrom('two_factor')
    .select(['secret', 'verified', 'locked_until'])
    .where('user_id', '=', userId)
    .executeTakeFirst()
  return row && { secret: row.secret, verified: row.verified, lockedUntil: row.locked_until }
}

/** A new, unconfirmed secret for the user, replacing any earlier unconfirmed one. */
export async function putPendingSecret(trx: Trx, userId: string, secret: string, now: Date): Promise<boolean> {
  // The row is locked by the upsert and judged as it is then: a setup confirmed meanwhile is never
  // replaced (two-factor on with a secret nobody has would lock its holder out). False then.
  const written = await trx
    .insertInto('two_factor')
    .values({ user_id: userId, secret, verified: false, last_step: null, failed_attempts: 0, created_at: now, updated_at: now })
    .onConflict((oc) =>
      oc
        .column('user_id')
        .doUpdateSet({ secret, verified: false, last_step: null, failed_attempts: 0, updated_at: now })
        .where('two_factor.verified', '=', false),
    )
    .returning('user_id')
    .executeTakeFirst()
  return written !== undefined
}

/** The user's backup codes become exactly these (hashes). */
export async function replaceBackupCodes(trx: Trx, userId: string, codeHashes: readonly string[]): Promise<void> {
  await trx.deleteFrom('two_factor_backup_code').where('user_id', '=', userId).execute()
  await trx
    .insertInto('two_factor_backup_code')
    .values(codeHashes.map((code_hash) => ({ user_id: userId, code_hash })))
    .execute()
}

/**
 * Takes one of the signed-in user's five tries at a code, before the code is checked, so parallel
 * guesses cannot all slip under the limit. False when the tries are spent.
 */
export async function claimCodeAttempt(db: Executor, userId: string, max: number, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('two_factor')
    .set((eb) => ({ failed_attempts: eb('failed_attempts', '+', 1), updated_at: now }))
    .where('user_id', '=', userId)
    .where('failed_attempts', '<', max)
    .returning('user_id')
    .executeTakeFirst()
  return row !== undefined
}

/** A right code: the tries start again from zero, and a sign-in lock ends. */
export async function resetCodeAttempts(trx: Trx, userId: string, now: Date): Promise<void> {
  await trx
    .updateTable('two_factor')
    .set({ failed_attempts: 0, sign_in_failures: 0, locked_until: null, updated_at: now })
    .where('user_id', '=', userId)
    .execute()
}

/**
 * Takes one of the tries at sign-in before the code is checked, counted as a wrong code until a
 * right one resets the count (acceptStep, resetCodeAttempts): the `max`-th in a row locks sign-in
 * with the second factor until `lockUntil` (and the count starts again). One statement that also
 * reads the lock, so parallel guesses over many challenges cannot all pass a lock check made before
 * any of them failed. False while the lock holds (or two-factor is off).
 */
export async function claimSignInAttempt(
  db: Executor,
  userId: string,
  max: number,
  lockUntil: Date,
  now: Date,
): Promise<boolean> {
  const row = await db
    .updateTable('two_factor')
    .set({
      sign_in_failures: sql<number>`case when sign_in_failures + 1 >= ${max} then 0 else sign_in_failures + 1 end`,
      locked_until: sql<Date | null>`case when sign_in_failures + 1 >= ${max} then ${lockUntil}::timestamptz else null end`,
      updated_at: now,
    })
    .where('user_id', '=', userId)
    .where('verified', '=', true)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]))
    .returning('user_id')
    .executeTakeFirst()
  return row !== undefined
}

/**
 * Records `step` as the last TOTP time step accepted, only when it is later than the last one: false
 * for a replayed code (or an earlier one). One statement, so two requests with the same code cannot
 * both pass.
 */
export async function acceptStep(trx: Trx, userId: string, step: number, now: Date): Promise<boolean> {
  const row = await trx
    .updateTable('two_factor')
    .set({ last_step: step, failed_attempts: 0, sign_in_failures: 0, locked_until: null, updated_at: now })
    .where('user_id', '=', userId)
    .where((eb) => eb.or([eb('last_step', 'is', null), eb('last_step', '<', sql<string>`${step}`)]))
    .returning('user_id')
    .executeTakeFirst()
  return row !== undefined
}

/** Locks the user's setup while its secret is still `secret`; false when it was replaced or removed. */
export async function lockSetup(trx: Trx, userId: string, secret: string): Promise<boolean> {
  const row = await trx
    .selectFrom('two_factor')
    .select('user_id')
    .where('user_id', '=', userId)
    .where('secret', '=', secret)
    .forUpdate()
    .executeTakeFirst()
  return row !== undefined
}

/** Confirms the user's pending setup (locked by lockSetup, so still the one whose code was checked). */
export async function markSecretVerified(trx: Trx, userId: string, now: Date): Promise<void> {
  await trx.updateTable('two_factor').set({ verified: true, updated_at: now }).where('user_id', '=', userId).execute()
}

export async function setTwoFactorEnabled(trx: Trx, userId: string, enabled: boolean, now: Date): Promise<void> {
  await trx.updateTable('user').set({ two_factor_enabled: enabled, updated_at: now }).where('id', '=', userId).execute()
}

/** Uses a backup code: the delete is the claim, so a code works once even under concurrent use. */
export async function useBackupCode(trx: Trx, userId: string, candidates: readonly string[]): Promise<boolean> {
  const result = await trx
    .deleteFrom('two_factor_backup_code')
    .where('user_id', '=', userId)
    .where('code_hash', 'in', candidates)
    .executeTakeFirst()
  return result.numDeletedRows > 0n
}

/**
 * Two-factor off: the secret, the backup codes, pending challenges and every trusted device go. In
 * the order a sign-in's verify locks them (its challenge, then a backup code, then the two_factor
 * row), so the two racing on PostgreSQL wait for each other instead of deadlocking into a 500.
 */
export async function deleteTwoFactor(trx: Trx, userId: string): Promise<{ trustedDevices: number }> {
  await deleteChallenges(trx, userId)
  const trustedDevices = await deleteTrustedDevices(trx, userId)
  await trx.deleteFrom('two_factor_backup_code').where('user_id', '=', userId).execute()
  await trx.deleteFrom('two_factor').where('user_id', '=', userId).execute()
  return { trustedDevices }
}

/** The session (public id) was confirmed by a second factor. */
export async function markSessionTwoFactorVerified(trx: Trx, sessionId: string): Promise<void> {
  await trx.updateTable('session').set({ two_factor_verified: true }).where('id', '=', sessionId).execute()
}

/** No session of the user counts as having passed a second factor any more (two-factor was turned off). */
export async function clearSessionsTwoFactorVerified(trx: Trx, userId: string): Promise<void> {
  await trx
    .updateTable('session')
    .set({ two_factor_verified: false })
    .where('user_id', '=', userId)
    .where('two_factor_verified', '=', true)
    .execute()
}
