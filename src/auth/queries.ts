import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../../db/schema.js'
import { newId } from '../shared/ids.js'
import type { SessionUser } from './session/sessions.js'
import type { Executor } from '../../db/index.js'


export const CREDENTIAL = 'credential'

/** The columns of a user as returned to its owner (API.md §4). */
export const sessionUserColumns = [
  'id', 'name', 'email', 'email_verified', 'image', 'role', 'plan', 'plan_expires_at', 'created_at', 'updated_at',
] as const
const userColumns = [...sessionUserColumns.map((c) => `user.${c}` as const), 'user.password_reset_required'] as const

export type UserWithFlags = SessionUser & { passwordResetRequired: boolean }

export interface SessionUserRow {
  id: string; name: string; email: string; email_verified: boolean; image: string | null
  role: SessionUser['role']; plan: SessionUser['plan']; plan_expires_at: Date | null
  created_at: Date; updated_at: Date
}

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
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }
}

const toUser = (r: SessionUserRow & { password_reset_required: boolean }): UserWithFlags => ({
  ...toSessionUser(r),
  passwordResetRequired: r.password_reset_required,
})

export async function findUserById(db: Executor, id: string): Promise<UserWithFlags | undefined> {
  const row = await db.selectFrom('user').select(userColumns).where('id', '=', id).executeTakeFirst()
  return row && toUser(row)
}

export async function findUserByEmail(db: Executor, email: string): Promise<UserWithFlags | undefined> {
  const row = await db.selectFrom('user').select(userColumns).where('email', '=', email).executeTakeFirst()
  return row && toUser(row)
}

/** The user and the hash of their credential account (null when they have no password). */
export async function findCredentialByEmail(
  db: Executor,
  email: string,
): Promise<{ user: UserWithFlags; passwordHash: string | null } | undefined> {
  const row = await db
    .selectFrom('user')
    .leftJoin('account', (join) =>
      join.onRef('account.user_id', '=', 'user.id').on('account.provider_id', '=', CREDENTIAL),
    )
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
export async function setPasswordHash(db: Executor, userId: string, passwordHash: string, now = new Date()): Promise<void> {
  await db
    .insertInto('account')
    .values({ id: newId(), user_id: userId, provider_id: CREDENTIAL, account_id: userId, password_hash: passwordHash })
    .onConflict((oc) =>
      oc.columns(['provider_id', 'account_id']).doUpdateSet({ password_hash: passwordHash, updated_at: now }),
    )
    .execute()
}

/**
 * THE way a user's sessions end (sign-out everywhere, password reset or change, a demotion, an admin's
 * revoke, an identity provider claiming the address): every session of the user, all but the one
 * with public id `except` when given. Runs on `db` or inside the caller's transaction, so the act
 * that ends them and the ending commit together. The next request with an ended session is 401.
 * Returns how many sessions ended.
 */
export async function endSessionsOfUser(db: Executor, userId: string, options: { except?: string } = {}): Promise<number> {
  let query = db.deleteFrom('session').where('user_id', '=', userId)
  if (options.except !== undefined) query = query.where('id', '!=', options.except)
  const result = await query.executeTakeFirst()
  return Number(result.numDeletedRows)
}
