// The `session` table. The token itself is never stored: a row is found by SHA-256(token), and
// shown to clients by its public id.
import type { Selectable } from 'kysely'
import type { Executor } from '../../../db/index.js'
import { preparedStatement } from '../../../db/prepared.js'
import { signedInUserColumns, type SignedInUserRow, toSignedInUser } from '../../user/rows.js'
import type { SignedInUser } from '../../user/types.js'
import type { SessionTable } from '../core/tables.js'
import type { SessionState, SessionView } from './types.js'
import { ownRow } from '../../shared/own-row.js'

/** A session row as the session manager sees it: the public id, its token hash and its times. */
export interface StoredSession extends SessionView {
  tokenHash: string
  rememberMe: boolean
  twoFactorVerified: boolean
  /** An impersonation: the administrator's session it was opened from (ends with it, migration 0021_impersonation). */
  impersonatorSessionId?: string | null
}

// Runs on every request that carries a session cookie: a prepared statement (db/prepared.ts), one
// indexed lookup by token hash joined to the whole user row, profile included. Its text is written
// once, at module load, from the user's column list (src/user/rows.ts): a column the user gains is
// read here without a second list to keep in step.
const SESSION_LOOKUP = preparedStatement<
  SignedInUserRow & {
    session_id: string
    expires_at: Date
    remember_me: boolean
    ip_address: string | null
    user_agent: string | null
    two_factor_verified: boolean
    impersonated_by: string | null
    session_created_at: Date
    session_updated_at: Date
  }
>(
  'session_lookup',
  `select s.id as session_id, s.expires_at, s.remember_me, s.ip_address, s.user_agent, s.two_factor_verified, s.impersonated_by,
     s.created_at as session_created_at, s.updated_at as session_updated_at,
     ${signedInUserColumns.map((column) => `u.${column}`).join(', ')}
   from "session" s join "user" u on u.id = s.user_id
   where s.token_hash = $1`,
)

/** The session with that token hash and its user (profile included), expired or not. */
export async function findSessionByTokenHash(
  db: Executor,
  tokenHash: string,
): Promise<{ session: SessionState; user: SignedInUser } | undefined> {
  const row = (await db.executeQuery(SESSION_LOOKUP([tokenHash]))).rows[0]
  if (!row) return undefined
  const session: SessionState = {
    id: row.session_id,
    userId: row.id,
    expiresAt: row.expires_at,
    createdAt: row.session_created_at,
    updatedAt: row.session_updated_at,
    ipAddress: row.ip_address,
    userAgent: row.user_agent,
    rememberMe: row.remember_me,
    twoFactorVerified: row.two_factor_verified,
    impersonatedBy: row.impersonated_by,
  }
  return { session, user: toSignedInUser(row) }
}

/** `emailProvenAt`: when the sign-in itself proved the address (a code or link used in this browser), else none. */
export async function insertSession(db: Executor, session: StoredSession & { emailProvenAt?: Date | null }): Promise<void> {
  await db
    .insertInto('session')
    .values({
      id: session.id,
      token_hash: session.tokenHash,
      user_id: session.userId,
      expires_at: session.expiresAt,
      remember_me: session.rememberMe,
      ip_address: session.ipAddress,
      user_agent: session.userAgent,
      two_factor_verified: session.twoFactorVerified,
      email_proven_at: session.emailProvenAt ?? null,
      impersonated_by: session.impersonatedBy,
      impersonator_session_id: session.impersonatorSessionId ?? null,
      created_at: session.createdAt,
      updated_at: session.updatedAt,
    })
    .execute()
}

type SessionViewRow = Pick<
  Selectable<SessionTable>,
  'id' | 'user_id' | 'expires_at' | 'created_at' | 'updated_at' | 'ip_address' | 'user_agent' | 'impersonated_by'
>

const toSessionView = (r: SessionViewRow): SessionView => ({
  id: r.id,
  userId: r.user_id,
  expiresAt: r.expires_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  ipAddress: r.ip_address,
  userAgent: r.user_agent,
  impersonatedBy: r.impersonated_by,
})

/** Every session of the user, expired ones included (what lucia's adapter interface asks for). */
export async function sessionsOfUser(db: Executor, userId: string): Promise<StoredSession[]> {
  const rows = await db.selectFrom('session').selectAll().where('user_id', '=', userId).execute()
  return rows.map((r) => ({
    ...toSessionView(r),
    tokenHash: r.token_hash,
    rememberMe: r.remember_me,
    twoFactorVerified: r.two_factor_verified,
  }))
}

/**
 * The sessions of the user still live at `now`, newest first; an administrator's impersonation of
 * the user is not among them unless asked for (better-auth's admin plugin hides it from list-sessions).
 */
export async function listLiveSessions(
  db: Executor,
  userId: string,
  now: Date,
  options: { impersonations?: boolean } = {},
): Promise<SessionView[]> {
  let query = db
    .selectFrom('session')
    .select(['id', 'user_id', 'expires_at', 'created_at', 'updated_at', 'ip_address', 'user_agent', 'impersonated_by'])
    .where('user_id', '=', userId)
    .where('expires_at', '>', now)
  if (!options.impersonations) query = query.where('impersonated_by', 'is', null)
  const rows = await query.orderBy('created_at', 'desc').execute()
  return rows.map(toSessionView)
}

export async function setSessionExpiry(db: Executor, tokenHash: string, expiresAt: Date, now: Date): Promise<void> {
  await db.updateTable('session').set({ expires_at: expiresAt, updated_at: now }).where('token_hash', '=', tokenHash).execute()
}

export async function deleteSessionByTokenHash(db: Executor, tokenHash: string): Promise<void> {
  await db.deleteFrom('session').where('token_hash', '=', tokenHash).execute()
}

/** Deletes one session of the user by its public id; false when the user has no such session. */
export async function deleteSessionOfUser(db: Executor, userId: string, publicId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('session')
    .where(ownRow({ id: publicId, userId }))
    .executeTakeFirst()
  return result.numDeletedRows > 0n
}

export async function deleteExpiredSessions(db: Executor, now: Date): Promise<void> {
  await db.deleteFrom('session').where('expires_at', '<=', now).execute()
}

/** What a session proved of its account (session/second-factor.ts judges it). */
export interface SessionProof {
  emailProvenAt: Date | null
  twoFactorVerified: boolean
  createdAt: Date
}

/**
 * The proofs of the user's session `id`; undefined when it has ended. `lock`: the row is locked
 * until the caller's transaction ends (a revoke or sign-out waits, or went first and nothing is found).
 */
export async function findSessionProof(
  db: Executor,
  session: { id: string; userId: string },
  options: { lock: boolean },
): Promise<SessionProof | undefined> {
  let query = db.selectFrom('session').select(['email_proven_at', 'two_factor_verified', 'created_at']).where(ownRow(session))
  if (options.lock) query = query.forUpdate()
  const row = await query.executeTakeFirst()
  return row && { emailProvenAt: row.email_proven_at, twoFactorVerified: row.two_factor_verified, createdAt: row.created_at }
}

/** The user's session `id` proved the account's address at `now` (a code typed in it, a link opened in it). */
export async function markSessionEmailProven(db: Executor, session: { id: string; userId: string }, now: Date): Promise<void> {
  await db.updateTable('session').set({ email_proven_at: now }).where(ownRow(session)).execute()
}

/** The account's address changed: what its sessions proved was the old one's. */
export async function forgetEmailProofs(db: Executor, userId: string): Promise<void> {
  await db.updateTable('session').set({ email_proven_at: null }).where('user_id', '=', userId).execute()
}
