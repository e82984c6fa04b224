// The user and account rows: every query on them that auth makes, and the one mapping of a row to
// the user and the profile the API knows.
import type { Selectable } from 'kysely'
import type { Executor, Trx } from '../../db/index.js'
import { newId } from '../shared/ids.js'
import type { SessionUser } from './session/sessions.js'
import type { BirthPlace, Gender, UserTable } from './tables.js'
import type { Role } from '../shared/roles.js'

export const CREDENTIAL = 'credential'

/** The columns of a user as returned to its owner (docs/http-contract.md, "Accounts and sessions"). */
export const sessionUserColumns = [
  'id',
  'name',
  'email',
  'email_verified',
  'image',
  'role',
  'plan',
  'plan_expires_at',
  'two_factor_enabled',
  'created_at',
  'updated_at',
] as const
export const userColumns = [
  ...sessionUserColumns.map((c) => `user.${c}` as const),
  'user.password_reset_required',
  'user.credential_epoch',
  'user.ways_in_unproven',
] as const

export type UserWithFlags = SessionUser & {
  passwordResetRequired: boolean
  /** Read with the credential a sign-in checks: its session is born only while this is unchanged (sessions.ts). */
  credentialEpoch: number
  /** The address was proven without the account's session: the next take-back removes its ways in (account/take-back.ts). */
  waysInUnproven: boolean
}

export type SessionUserRow = Pick<Selectable<UserTable>, (typeof sessionUserColumns)[number]>

/** The one mapping from a user row to the user object of the API. */
export function toSessionUser(r: SessionUserRow): SessionUser {
  return {
    id: r.id,
    name: r.name,
    email: r.email,
    emailVerified: r.email_verified,
    image: r.image,
    role: r.role,
    plan: r.plan,
    planExpiresAt: r.plan_expires_at,
    twoFactorEnabled: r.two_factor_enabled,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }
}

export const toUser = (
  r: SessionUserRow & { password_reset_required: boolean; credential_epoch: number; ways_in_unproven: boolean },
): UserWithFlags => ({
  ...toSessionUser(r),
  passwordResetRequired: r.password_reset_required,
  credentialEpoch: r.credential_epoch,
  waysInUnproven: r.ways_in_unproven,
})

/** The profile part of the user: read with every session, written by the profile domain. */
export interface Profile {
  id: string
  email: string
  name: string
  image: string | null
  birthDate: string | null
  birthTime: string | null
  birthPlace: BirthPlace | null
  gender: Gender | null
  locale: string | null
  timezone: string | null
  createdAt: Date
  updatedAt: Date
}

export const profileColumns = [
  'id',
  'email',
  'name',
  'image',
  'birth_date',
  'birth_time',
  'birth_place',
  'gender',
  'locale',
  'timezone',
  'created_at',
  'updated_at',
] as const

export type ProfileRow = Pick<Selectable<UserTable>, (typeof profileColumns)[number]>

/** The one mapping from a user row's profile columns to the profile. */
export function toProfile(r: ProfileRow): Profile {
  return {
    id: r.id,
    email: r.email,
    name: r.name,
    image: r.image,
    birthDate: r.birth_date,
    birthTime: r.birth_time,
    birthPlace: r.birth_place,
    gender: r.gender,
    locale: r.locale,
    timezone: r.timezone,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }
}

export async function findUserById(db: Executor, id: string): Promise<UserWithFlags | undefined> {
  const row = await db.selectFrom('user').select(userColumns).where('id', '=', id).executeTakeFirst()
  return row && toUser(row)
}

export async function findUserByEmail(db: Executor, email: string): Promise<UserWithFlags | undefined> {
  const row = await db.selectFrom('user').select(userColumns).where('email', '=', email).executeTakeFirst()
  return row && toUser(row)
}

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

/** The user and the hash of their credential account (null when they have no password). */
export async function findCredentialByEmail(
  db: Executor,
  email: string,
): Promise<{ user: UserWithFlags; passwordHash: string | null } | undefined> {
  const row = await db
    .selectFrom('user')
    .leftJoin('account', (join) => join.onRef('account.user_id', '=', 'user.id').on('account.provider_id', '=', CREDENTIAL))
    .select([...userColumns, 'account.password_hash'])
    .where('user.email', '=', email)
    .executeTakeFirst()
  return row && { user: toUser(row), passwordHash: row.password_hash }
}

export async function findPasswordHash(db: Executor, userId: string): Promise<string | null> {
  const row = await db
    .selectFrom('account')
    .select('password_hash')
    .where('user_id', '=', userId)
    .where('provider_id', '=', CREDENTIAL)
    .executeTakeFirst()
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
    .where('user_id', '=', userId)
    .where('provider_id', '=', CREDENTIAL)
    .where('password_hash', '=', expected)
    .executeTakeFirst()
  return result.numUpdatedRows === 1n
}

/**
 * Locks the user's row until the transaction ends: a request that checked something outside its
 * transaction takes it before the rows it writes, in resetPassword's order (user, then sessions).
 */
export async function lockUser(trx: Trx, userId: string): Promise<{ email: string; emailVerified: boolean } | undefined> {
  const row = await trx
    .selectFrom('user')
    .select(['email', 'email_verified'])
    .where('id', '=', userId)
    .forUpdate()
    .executeTakeFirst()
  return row && { email: row.email, emailVerified: row.email_verified }
}

/** Locks the user's session `id` until the transaction ends; false when it has ended. */
export async function lockSessionOf(trx: Trx, userId: string, id: string): Promise<boolean> {
  const row = await trx
    .selectFrom('session')
    .select('id')
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .forUpdate()
    .executeTakeFirst()
  return row !== undefined
}

/**
 * Removes every way into the user's account but one: the password, or the account `accountId`;
 * returns the kinds removed. For an address proven by someone else than whoever holds it now: a
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
  return removed.map((r) => r.provider_id)
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

/** The address was proven without a session of the account: its ways in are not known to be the prover's. */
export async function markWaysInUnproven(trx: Trx, userId: string): Promise<void> {
  await trx.updateTable('user').set({ ways_in_unproven: true }).where('id', '=', userId).execute()
}

/** The address counts as verified (an identity provider vouched for it). */
export async function setEmailVerified(trx: Trx, userId: string, now: Date): Promise<void> {
  await trx.updateTable('user').set({ email_verified: true, updated_at: now }).where('id', '=', userId).execute()
}

/** The role of a user whose email is verified, with the row locked until the transaction ends. */
export async function lockRoleOfVerifiedUser(trx: Trx, userId: string): Promise<Role | undefined> {
  const row = await trx
    .selectFrom('user')
    .select('role')
    .where('id', '=', userId)
    .where('email_verified', '=', true)
    .forUpdate()
    .executeTakeFirst()
  return row?.role
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
  const row = await db.selectFrom('user').select('credential_epoch').where('id', '=', userId).executeTakeFirst()
  return row?.credential_epoch ?? 0
}

/** The user's credential epoch and ban, the row share-locked until the transaction ends: a session is born under it. */
export async function lockUserForSignIn(
  trx: Trx,
  userId: string,
): Promise<{ credentialEpoch: number; banned: boolean; banExpiresAt: Date | null } | undefined> {
  const row = await trx
    .selectFrom('user')
    .select(['credential_epoch', 'banned', 'ban_expires'])
    .where('id', '=', userId)
    .forShare()
    .executeTakeFirst()
  return row && { credentialEpoch: row.credential_epoch, banned: row.banned, banExpiresAt: row.ban_expires }
}

/** A suspension, as better-auth's admin plugin names its fields. */
export interface Ban {
  banned: boolean
  banReason: string | null
  banExpiresAt: Date | null
}

export async function findBan(db: Executor, userId: string): Promise<Ban | undefined> {
  const row = await db
    .selectFrom('user')
    .select(['banned', 'ban_reason', 'ban_expires'])
    .where('id', '=', userId)
    .executeTakeFirst()
  return row && { banned: row.banned, banReason: row.ban_reason, banExpiresAt: row.ban_expires }
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
