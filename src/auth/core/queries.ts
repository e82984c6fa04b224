// The account rows and auth's writes to the user row. The user itself (its types, columns, mapper
// and lock) lives in its home, src/user/.
import type { Executor, Trx } from '../../../db/index.js'
import { newId } from '../../shared/ids.js'
import type { Role } from '../../shared/roles.js'
import { banColumns, toUserWithFlags, userColumns } from '../../user/rows.js'
import { readUser } from '../../user/queries.js'
import type { Ban, UserWithFlags } from '../../user/types.js'
import { ownRow } from '../../shared/own-row.js'
import { countRows } from '../../shared/count-rows.js'
import type { ExpressionBuilder } from 'kysely'
import type { Database } from '../../../db/schema.js'

export const CREDENTIAL = 'credential'

/** The user's credential account: the row that holds their password. */
const credentialOf = (userId: string) => (eb: ExpressionBuilder<Database, 'account'>) =>
  eb.and({ user_id: userId, provider_id: CREDENTIAL })

/** A new user row; the columns not given take their defaults (a member on the free plan). */
export async function insertUser(
  trx: Trx,
  user: { id: string; name: string; email: string; image: string | null; emailVerified?: boolean },
): Promise<void> {
  await trx
    .insertInto('user')
    .values({ id: user.id, name: user.name, email: user.email, image: user.image, email_verified: user.emailVerified })
    .execute()
}

/** Links a way in to a user: the credential account (with its hash) or an identity provider's subject. */
export async function insertAccount(
  trx: Trx,
  account: { id?: string; userId: string; providerId: string; accountId: string; passwordHash: string | null },
): Promise<void> {
  await trx
    .insertInto('account')
    .values({
      id: account.id ?? newId(),
      user_id: account.userId,
      provider_id: account.providerId,
      account_id: account.accountId,
      password_hash: account.passwordHash,
    })
    .execute()
}

/**
 * Links a provider login to the user unless it is linked already: 'linked', 'already' (to this
 * user), or 'other' (to another user, which keeps it: the same subject is always the same user).
 */
export async function linkProviderLogin(
  trx: Trx,
  login: { userId: string; providerId: string; accountId: string },
): Promise<'linked' | 'already' | 'other'> {
  const inserted = await trx
    .insertInto('account')
    .values({
      id: newId(),
      user_id: login.userId,
      provider_id: login.providerId,
      account_id: login.accountId,
      password_hash: null,
    })
    .onConflict((oc) => oc.columns(['provider_id', 'account_id']).doNothing())
    .returning('id')
    .executeTakeFirst()
  if (inserted) return 'linked'
  const holder = await trx
    .selectFrom('account')
    .select('user_id')
    .where('provider_id', '=', login.providerId)
    .where('account_id', '=', login.accountId)
    .executeTakeFirst()
  return holder?.user_id === login.userId ? 'already' : 'other'
}

/** The user and the hash of their credential account (null when they have no password). */
export async function findCredentialByEmail(
  db: Executor,
  email: string,
): Promise<{ user: UserWithFlags; passwordHash: string | null } | undefined> {
  const row = await db
    .selectFrom('user')
    .leftJoin('account', (join) => join.onRef('account.user_id', '=', 'user.id').on('account.provider_id', '=', CREDENTIAL))
    .select([...userColumns.map((c) => `user.${c}` as const), 'account.password_hash'])
    .where('user.email', '=', email)
    .executeTakeFirst()
  return row && { user: toUserWithFlags(row), passwordHash: row.password_hash }
}

export async function findPasswordHash(db: Executor, userId: string): Promise<string | null> {
  const row = await db.selectFrom('account').select('password_hash').where(credentialOf(userId)).executeTakeFirst()
  return row?.password_hash ?? null
}

/** Sets the credential password, creating the credential account when the user has none. */
export async function setPasswordHash(db: Executor, userId: string, passwordHash: string, now: Date): Promise<void> {
  await db
    .insertInto('account')
    .values({ id: newId(), user_id: userId, provider_id: CREDENTIAL, account_id: userId, password_hash: passwordHash })
    .onConflict((oc) => oc.columns(['provider_id', 'account_id']).doUpdateSet({ password_hash: passwordHash, updated_at: now }))
    .execute()
}

/**
 * Replaces the password only while it is still `expected`, the one a change-password checked:
 * false when a reset (or another change) replaced it meanwhile.
 */
export async function replacePasswordHash(
  trx: Trx,
  userId: string,
  expected: string,
  passwordHash: string,
  now: Date,
): Promise<boolean> {
  const result = await trx
    .updateTable('account')
    .set({ password_hash: passwordHash, updated_at: now })
    .where(credentialOf(userId))
    .where('password_hash', '=', expected)
    .executeTakeFirst()
  return result.numUpdatedRows === 1n
}

/** Locks the user's session `id` until the transaction ends; false when it has ended. */
export async function lockSessionOf(trx: Trx, userId: string, id: string): Promise<boolean> {
  const row = await trx.selectFrom('session').select('id').where(ownRow({ id, userId })).forUpdate().executeTakeFirst()
  return row !== undefined
}

/**
 * Removes every way into the user's account but one: the password, or the account `accountId`
 * (a phone number never stays); returns the kinds removed. For an address proven by someone else than whoever holds it now: a
 * reset that proves an address nobody had proven (a link made from an identity whose address the
 * provider did not vouch for may be whoever registered the address first), or the provider vouching
 * for the address (only the identity just linked stays).
 */
export async function deleteAccountsBut(
  trx: Trx,
  userId: string,
  keep: 'password' | 'none' | { providerId: string; subject: string },
): Promise<string[]> {
  const removed = await trx
    .deleteFrom('account')
    .where('user_id', '=', userId)
    .where((eb) =>
      keep === 'none'
        ? eb.lit(true)
        : keep === 'password'
          ? eb('provider_id', '<>', CREDENTIAL)
          : eb.or([eb('provider_id', '<>', keep.providerId), eb('account_id', '<>', keep.subject)]),
    )
    .returning('provider_id')
    .execute()
  // A verified phone number is a way in too (src/auth/phone/): it never stays.
  const phone = await trx
    .updateTable('user')
    .set({ phone_number: null, phone_number_verified: false })
    .where('id', '=', userId)
    .where('phone_number', 'is not', null)
    .returning('id')
    .executeTakeFirst()
  return [...removed.map((r) => r.provider_id), ...(phone ? ['phone-number'] : [])]
}

/** The account's ways in: its password (`credential`) and its provider logins. */
export async function waysIn(db: Executor, userId: string): Promise<{ providerId: string; accountId: string }[]> {
  const rows = await db.selectFrom('account').select(['provider_id', 'account_id']).where('user_id', '=', userId).execute()
  return rows.map((r) => ({ providerId: r.provider_id, accountId: r.account_id }))
}

/** After a password reset or change: the account no longer has to reset its password. */
export async function clearPasswordResetRequired(trx: Trx, userId: string, now: Date): Promise<void> {
  await trx.updateTable('user').set({ password_reset_required: false, updated_at: now }).where('id', '=', userId).execute()
}

/**
 * Marks the email verified when the user still has the address `email` (the one a verification
 * link was sent to); undefined when it changed since.
 */
export async function markEmailVerified(
  trx: Trx,
  userId: string,
  email: string,
  now: Date,
): Promise<{ id: string; email: string } | undefined> {
  return trx
    .updateTable('user')
    .set({ email_verified: true, updated_at: now })
    .where('id', '=', userId)
    .where('email', '=', email)
    .returning(['id', 'email'])
    .executeTakeFirst()
}

/**
 * Whether the address was last proven without a session of the account (its ways in are not known
 * to be the prover's: true) or with one (false).
 */
export async function setWaysInUnproven(trx: Trx, userId: string, unproven: boolean): Promise<void> {
  await trx.updateTable('user').set({ ways_in_unproven: unproven }).where('id', '=', userId).execute()
}

/** The address counts as verified (an identity provider vouched for it). */
export async function setEmailVerified(trx: Trx, userId: string, now: Date): Promise<void> {
  await trx.updateTable('user').set({ email_verified: true, updated_at: now }).where('id', '=', userId).execute()
}

/** Replaces the role `from` by `to`; false when the user no longer has the role `from`. */
export async function replaceRole(trx: Trx, userId: string, from: Role, to: Role, now: Date): Promise<boolean> {
  const updated = await trx
    .updateTable('user')
    .set({ role: to, updated_at: now })
    .where('id', '=', userId)
    .where('role', '=', from)
    .executeTakeFirst()
  return updated.numUpdatedRows === 1n
}

/**
 * THE way a user's sessions end (sign-out everywhere, password reset or change, a demotion, an admin's
 * revoke, an identity provider claiming the address): every session of the user, all but the one
 * with public id `except` when given. Runs on `db` or inside the caller's transaction, so the act
 * that ends them and the ending commit together. The next request with an ended session is 401.
 * Returns how many sessions ended.
 */
export async function endSessionsOfUser(db: Executor, userId: string, options: { except?: string } = {}): Promise<number> {
  // First the epoch, which waits for a sign-in holding the user row (sessions.ts) to commit; then
  // the delete, a statement of its own so that its snapshot, taken after that wait, sees the
  // session that sign-in inserted. (One statement with a CTE would share a snapshot taken before.)
  await raiseCredentialEpoch(db, userId)
  let query = db.deleteFrom('session').where('user_id', '=', userId)
  if (options.except !== undefined) query = query.where('id', '!=', options.except)
  const result = await query.executeTakeFirst()
  return Number(result.numDeletedRows)
}

/**
 * Sign-ins whose credential was checked before now can no longer start a session (sessions.ts):
 * raised with the user row locked until the caller's transaction ends.
 */
export async function raiseCredentialEpoch(db: Executor, userId: string): Promise<void> {
  await db
    .updateTable('user')
    .set((eb) => ({ credential_epoch: eb('credential_epoch', '+', 1) }))
    .where('id', '=', userId)
    .execute()
}

/** The user's credential epoch now (0 when the user is gone: no session can be born for them anyway). */
export async function credentialEpochOf(db: Executor, userId: string): Promise<number> {
  return (await readUser(db, { id: userId }, ['credential_epoch']))?.credentialEpoch ?? 0
}

export async function findBan(db: Executor, userId: string): Promise<Ban | undefined> {
  return readUser(db, { id: userId }, banColumns)
}

/** Lifts the ban of the user when it expired at or before `now`; false when there was none to lift. */
export async function liftExpiredBan(db: Executor, userId: string, now: Date): Promise<boolean> {
  const result = await db
    .updateTable('user')
    .set({ banned: false, ban_reason: null, ban_expires: null, updated_at: now })
    .where('id', '=', userId)
    .where('banned', '=', true)
    .where('ban_expires', '<=', now)
    .executeTakeFirst()
  return result.numUpdatedRows === 1n
}

/** The user's passkeys, counted: a passkey is a second factor (second-factor.ts), and at most so many are kept. */
export async function countPasskeys(db: Executor, userId: string): Promise<number> {
  return countRows(db.selectFrom('passkey').where('user_id', '=', userId))
}
