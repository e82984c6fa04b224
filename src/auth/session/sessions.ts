// Sessions through lucia over a small Kysely adapter. lucia is no longer developed upstream: it is
// used only here, so replacing it is a one-file change.
//
// The cookie carries a random 256-bit token (signed with AUTH_SECRET by @fastify/cookie). The
// database stores only SHA-256(token) — lucia's "session id" — and a separate public id that is
// the only id ever shown to clients. A database dump alone never yields a usable cookie.
import { createHash, randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { Lucia, TimeSpan, type Adapter, type DatabaseSession, type DatabaseUser } from 'lucia'
import type { DB } from '../../../db/index.js'
import { preparedStatement } from '../../../db/prepared.js'
import { newId } from '../../shared/ids.js'
import { toProfile, type ProfileRow } from '../../profile/queries.js'
import type { Profile } from '../../profile/service.js'
import { endSessionsOfUser, toSessionUser, type SessionUserRow } from '../queries.js'
import type { Plan, Role } from '../tables.js'

const BROWSER_SESSION_MS = 24 * 60 * 60 * 1000 // rememberMe: false

/** The user as returned to its owner (API.md §4). */
export interface SessionUser {
  id: string
  name: string
  email: string
  emailVerified: boolean
  image: string | null
  role: Role
  plan: Plan
  planExpiresAt: Date | null
  createdAt: Date
  updatedAt: Date
}

/**
 * The user of a valid session, with their profile: the session lookup reads the whole user row in
 * its one query, so routes such as getProfile need no query of their own.
 */
export interface SignedInUser extends SessionUser {
  profile: Profile
}

/** The session as shown to clients: `id` is the public id, never the token or its hash. */
export interface SessionView {
  id: string
  userId: string
  expiresAt: Date
  createdAt: Date
  updatedAt: Date
  ipAddress: string | null
  userAgent: string | null
}

export interface ValidSession {
  user: SignedInUser
  session: SessionView & { rememberMe: boolean }
  /** The expiry moved forward: the cookie should be sent again. */
  fresh: boolean
}

interface DbSessionAttributes {
  publicId: string
  rememberMe: boolean
  ipAddress: string | null
  userAgent: string | null
  createdAt?: Date
  updatedAt?: Date
}

declare module 'lucia' {
  interface Register {
    Lucia: Lucia<DbSessionAttributes, SignedInUser>
    DatabaseSessionAttributes: DbSessionAttributes
    DatabaseUserAttributes: SignedInUser
  }
}

// Runs on every request that carries a session cookie: a prepared statement (db/prepared.ts), one
// indexed lookup by token hash joined to the whole user row, profile included.
const SESSION_LOOKUP = preparedStatement<SessionUserRow & ProfileRow & {
  session_id: string
  expires_at: Date
  remember_me: boolean
  ip_address: string | null
  user_agent: string | null
  session_created_at: Date
  session_updated_at: Date
}>(
  'session_lookup',
  `select s.id as session_id, s.expires_at, s.remember_me, s.ip_address, s.user_agent,
     s.created_at as session_created_at, s.updated_at as session_updated_at,
     u.id, u.name, u.email, u.email_verified, u.image, u.role, u.plan, u.plan_expires_at,
     u.created_at, u.updated_at,
     u.birth_date, u.birth_time, u.birth_place, u.gender, u.locale, u.timezone
   from "session" s join "user" u on u.id = s.user_id
   where s.token_hash = $1`,
)

export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex')

class KyselySessionAdapter implements Adapter {
  constructor(private readonly db: DB) {}

  async getSessionAndUser(tokenHash: string): Promise<[DatabaseSession | null, DatabaseUser | null]> {
    const row = (await this.db.executeQuery(SESSION_LOOKUP([tokenHash]))).rows[0]
    if (!row) return [null, null]
    const session: DatabaseSession = {
      id: tokenHash,
      userId: row.id,
      expiresAt: row.expires_at,
      attributes: {
        publicId: row.session_id,
        rememberMe: row.remember_me,
        ipAddress: row.ip_address,
        userAgent: row.user_agent,
        createdAt: row.session_created_at,
        updatedAt: row.session_updated_at,
      },
    }
    return [session, { id: row.id, attributes: { ...toSessionUser(row), profile: toProfile(row) } }]
  }

  async getUserSessions(userId: string): Promise<DatabaseSession[]> {
    const rows = await this.db.selectFrom('session').selectAll().where('user_id', '=', userId).execute()
    return rows.map((r) => ({
      id: r.token_hash,
      userId: r.user_id,
      expiresAt: r.expires_at,
      attributes: { publicId: r.id, rememberMe: r.remember_me, ipAddress: r.ip_address, userAgent: r.user_agent },
    }))
  }

  async setSession(session: DatabaseSession): Promise<void> {
    const a = session.attributes
    await this.db
      .insertInto('session')
      .values({
        id: a.publicId,
        token_hash: session.id,
        user_id: session.userId,
        expires_at: a.rememberMe ? session.expiresAt : new Date(Date.now() + BROWSER_SESSION_MS),
        remember_me: a.rememberMe,
        ip_address: a.ipAddress,
        user_agent: a.userAgent,
      })
      .execute()
  }

  async updateSessionExpiration(tokenHash: string, expiresAt: Date): Promise<void> {
    // A browser session (rememberMe: false) slides by one day, a remembered one by the full lifetime.
    await this.db
      .updateTable('session')
      .set({
        // Typed casts: a bare parameter inside CASE arrives as text and Postgres refuses it.
        expires_at: sql<Date>`case when remember_me then ${expiresAt}::timestamptz else ${new Date(Date.now() + BROWSER_SESSION_MS)}::timestamptz end`,
        updated_at: new Date(),
      })
      .where('token_hash', '=', tokenHash)
      .execute()
  }

  async deleteSession(tokenHash: string): Promise<void> {
    await this.db.deleteFrom('session').where('token_hash', '=', tokenHash).execute()
  }

  async deleteUserSessions(userId: string): Promise<void> {
    await endSessionsOfUser(this.db, userId)
  }

  async deleteExpiredSessions(): Promise<void> {
    await this.db.deleteFrom('session').where('expires_at', '<=', new Date()).execute()
  }
}

export class SessionManager {
  private readonly lucia: Lucia<DbSessionAttributes, SignedInUser>
  readonly ttlMs: number

  constructor(
    private readonly db: DB,
    ttlDays: number,
  ) {
    this.ttlMs = ttlDays * 24 * 60 * 60 * 1000
    this.lucia = new Lucia(new KyselySessionAdapter(db), {
      sessionExpiresIn: new TimeSpan(ttlDays, 'd'),
      getSessionAttributes: (a) => a,
      getUserAttributes: (u) => u,
    })
  }

  /** A new session with a fresh token: called at every sign-in, so a planted token is never reused. */
  async create(
    userId: string,
    options: { rememberMe: boolean; ipAddress?: string | null; userAgent?: string | null },
  ): Promise<{ token: string; session: SessionView }> {
    const token = randomBytes(32).toString('base64url')
    const now = new Date()
    const created = await this.lucia.createSession(
      userId,
      {
        publicId: newId(),
        rememberMe: options.rememberMe,
        ipAddress: options.ipAddress ?? null,
        userAgent: options.userAgent?.slice(0, 512) ?? null,
      },
      { sessionId: hashToken(token) },
    )
    return {
      token,
      session: {
        id: created.publicId,
        userId,
        expiresAt: options.rememberMe ? created.expiresAt : new Date(now.getTime() + BROWSER_SESSION_MS),
        createdAt: now,
        updatedAt: now,
        ipAddress: created.ipAddress,
        userAgent: created.userAgent,
      },
    }
  }

  /** Validates a token against the database on every call: a revoked session fails at once everywhere. */
  async validate(token: string): Promise<ValidSession | null> {
    const { session, user } = await this.lucia.validateSession(hashToken(token))
    if (!session) return null
    const view: SessionView & { rememberMe: boolean } = {
      id: session.publicId,
      userId: session.userId,
      expiresAt: session.rememberMe || !session.fresh ? session.expiresAt : new Date(Date.now() + BROWSER_SESSION_MS),
      createdAt: session.createdAt ?? new Date(),
      updatedAt: session.fresh ? new Date() : (session.updatedAt ?? new Date()),
      ipAddress: session.ipAddress,
      userAgent: session.userAgent,
      rememberMe: session.rememberMe,
    }
    return { user, session: view, fresh: session.fresh && session.rememberMe }
  }

  async revokeByToken(token: string): Promise<void> {
    await this.lucia.invalidateSession(hashToken(token))
  }

  /** Revokes one session of a user by its public id; false when there is no such session of theirs. */
  async revokeById(userId: string, publicId: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('session')
      .where('id', '=', publicId)
      .where('user_id', '=', userId)
      .executeTakeFirst()
    return result.numDeletedRows > 0n
  }

  /** Ends every session of the user, except the one with public id `exceptId` when given (endSessionsOfUser). */
  revokeAll(userId: string, exceptId?: string): Promise<number> {
    return endSessionsOfUser(this.db, userId, { except: exceptId })
  }

  async list(userId: string): Promise<SessionView[]> {
    const rows = await this.db
      .selectFrom('session')
      .select(['id', 'user_id', 'expires_at', 'created_at', 'updated_at', 'ip_address', 'user_agent'])
      .where('user_id', '=', userId)
      .where('expires_at', '>', new Date())
      .orderBy('created_at', 'desc')
      .execute()
    return rows.map((r) => ({
      id: r.id,
      userId: r.user_id,
      expiresAt: r.expires_at,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
      ipAddress: r.ip_address,
      userAgent: r.user_agent,
    }))
  }
}
