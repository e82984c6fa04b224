// Sessions through lucia over a small Kysely adapter (the queries are in session/queries.ts). lucia
// is no longer developed upstream: it is used only here, so replacing it is a one-file change.
//
// The cookie carries a random 256-bit token (signed with AUTH_SECRET by @fastify/cookie). The
// database stores only SHA-256(token) — lucia's "session id" — and a separate public id that is
// the only id ever shown to clients. A database dump alone never yields a usable cookie.
//
// Time is app.clock's, never lucia's: lucia reads Date.now() for a new session's expiry and in
// validateSession, and a test that moves the clock must see sessions expire and renew. So the
// manager dates new sessions and applies lucia's validation rule itself, and inserts a new session
// itself, in the transaction that checks the user's credential epoch; lucia ends one.
import { Lucia, TimeSpan, type Adapter, type DatabaseSession, type DatabaseUser } from 'lucia'
import type { DB, Trx } from '../../../db/index.js'
import type { Clock } from '../../shared/clock.js'
import type { MaybePromise } from '../../shared/maybe-async.js'
import { newId } from '../../shared/ids.js'
import { bannedUser, isBanned } from '../core/ban.js'
import { unauthorized } from '../../shared/errors.js'
import { endSessionsOfUser } from '../core/queries.js'
import { lockUser } from '../../user/queries.js'
import type { SignedInUser } from '../../user/types.js'
import { hashToken, newToken } from '../core/tokens.js'
import type { CachedSession, SessionCache } from './cache.js'
import {
  deleteExpiredSessions,
  deleteSessionByTokenHash,
  deleteSessionOfUser,
  findSessionByTokenHash,
  insertSession,
  listLiveSessions,
  sessionsOfUser,
  setSessionExpiry,
  type StoredSession,
} from './queries.js'
import type { SessionState, SessionView } from './types.js'

const BROWSER_SESSION_MS = 24 * 60 * 60 * 1000 // rememberMe: false

export interface ValidSession {
  user: SignedInUser
  session: SessionState
  /** The expiry moved forward: the cookie should be sent again. */
  fresh: boolean
}

interface DbSessionAttributes {
  publicId: string
  rememberMe: boolean
  ipAddress: string | null
  userAgent: string | null
  twoFactorVerified: boolean
  impersonatedBy: string | null
  createdAt: Date
  /** The expiry the manager chose on app.clock; the one lucia computes from Date.now() is not stored. */
  expiresAt: Date
}

declare module 'lucia' {
  interface Register {
    Lucia: Lucia<DbSessionAttributes, SignedInUser>
    DatabaseSessionAttributes: DbSessionAttributes
    DatabaseUserAttributes: SignedInUser
  }
}

const toDatabaseSession = (s: StoredSession): DatabaseSession => ({
  id: s.tokenHash,
  userId: s.userId,
  expiresAt: s.expiresAt,
  attributes: {
    publicId: s.id,
    rememberMe: s.rememberMe,
    ipAddress: s.ipAddress,
    userAgent: s.userAgent,
    twoFactorVerified: s.twoFactorVerified,
    impersonatedBy: s.impersonatedBy,
    createdAt: s.createdAt,
    expiresAt: s.expiresAt,
  },
})

/** lucia's storage interface over session/queries.ts. lucia calls setSession and deleteSession; the rest completes its contract. */
class KyselySessionAdapter implements Adapter {
  constructor(
    private readonly db: DB,
    private readonly clock: Clock,
  ) {}

  async getSessionAndUser(tokenHash: string): Promise<[DatabaseSession | null, DatabaseUser | null]> {
    const found = await findSessionByTokenHash(this.db, tokenHash)
    if (!found) return [null, null]
    return [toDatabaseSession({ ...found.session, tokenHash }), { id: found.user.id, attributes: found.user }]
  }

  async getUserSessions(userId: string): Promise<DatabaseSession[]> {
    return (await sessionsOfUser(this.db, userId)).map(toDatabaseSession)
  }

  async setSession(session: DatabaseSession): Promise<void> {
    const a = session.attributes
    await insertSession(this.db, {
      id: a.publicId,
      tokenHash: session.id,
      userId: session.userId,
      expiresAt: a.expiresAt,
      createdAt: a.createdAt,
      updatedAt: a.createdAt,
      rememberMe: a.rememberMe,
      ipAddress: a.ipAddress,
      userAgent: a.userAgent,
      twoFactorVerified: a.twoFactorVerified,
      impersonatedBy: a.impersonatedBy,
    })
  }

  async updateSessionExpiration(tokenHash: string, expiresAt: Date): Promise<void> {
    await setSessionExpiry(this.db, tokenHash, expiresAt, this.clock.now())
  }

  async deleteSession(tokenHash: string): Promise<void> {
    await deleteSessionByTokenHash(this.db, tokenHash)
  }

  async deleteUserSessions(userId: string): Promise<void> {
    await endSessionsOfUser(this.db, userId)
  }

  async deleteExpiredSessions(): Promise<void> {
    await deleteExpiredSessions(this.db, this.clock.now())
  }
}

/**
 * What a sign-in proved: whose credential it checked, and the user's credential epoch read with
 * that credential (in the same row read as the password hash, the provider link, or the sign-in
 * challenge that carried it). The only way to a session (SessionManager.create).
 */
export interface CheckedCredential {
  userId: string
  epoch: number
}

/** A sign-in overtaken by a reset, a change of password, a ban, a deletion...: nothing was created. */
export const staleSignIn = () => unauthorized('The account changed while signing in: sign in again')

export class SessionManager {
  private readonly lucia: Lucia<DbSessionAttributes, SignedInUser>
  private readonly ttlMs: number

  constructor(
    private readonly db: DB,
    private readonly clock: Clock,
    ttlDays: number,
    /** Validated sessions in memory (cache.ts); without one, every lookup reads the database. */
    private readonly cache?: SessionCache,
  ) {
    this.ttlMs = ttlDays * 24 * 60 * 60 * 1000
    this.lucia = new Lucia(new KyselySessionAdapter(db, clock), {
      sessionExpiresIn: new TimeSpan(ttlDays, 'd'),
      getSessionAttributes: (a) => a,
      getUserAttributes: (u) => u,
    })
  }

  /** The end of a session started or renewed at `now`: a browser session (rememberMe: false) lasts a day. */
  private expiryFrom(now: Date, rememberMe: boolean): Date {
    return new Date(now.getTime() + (rememberMe ? this.ttlMs : BROWSER_SESSION_MS))
  }

  /**
   * A new session with a fresh token (a planted token is never reused), born only while nothing that
   * ends sessions committed since the credential was checked: the user row is share-locked, its
   * credential epoch compared and the session inserted in one transaction. A reset waits for that
   * lock and then ends this session with the others; a reset that committed first has raised the
   * epoch, and this sign-in answers 401 with nothing left behind. A deleted user is the same 401.
   * `alongside` runs in that transaction once the session is in (the browser's device is remembered
   * there, so a reset that forgets the account's devices cannot miss it): its result is returned.
   * An impersonation (src/admin/impersonation.ts) names the administrator and their session, and
   * ends at `expiresAt` at the latest, never renewed.
   */
  async create<T = undefined>(
    credential: CheckedCredential,
    options: {
      rememberMe: boolean
      ipAddress: string | null
      userAgent: string | null
      twoFactorVerified?: boolean
      /** The sign-in itself proved the address in this browser (session/second-factor.ts, provesAddress). */
      emailProven?: boolean
      impersonation?: { by: string; sessionId: string; expiresAt: Date }
    },
    alongside?: (trx: Trx, session: { id: string }) => Promise<T>,
  ): Promise<{ token: string; session: SessionView; alongside: T | undefined }> {
    const now = this.clock.now()
    const token = newToken()
    const { userId } = credential
    const stored: StoredSession = {
      id: newId(),
      tokenHash: hashToken(token),
      userId,
      rememberMe: options.rememberMe,
      ipAddress: options.ipAddress,
      userAgent: options.userAgent?.slice(0, 512) ?? null,
      twoFactorVerified: options.twoFactorVerified ?? false,
      impersonatedBy: options.impersonation?.by ?? null,
      impersonatorSessionId: options.impersonation?.sessionId ?? null,
      createdAt: now,
      updatedAt: now,
      expiresAt: options.impersonation?.expiresAt ?? this.expiryFrom(now, options.rememberMe),
    }
    const done = await this.db.transaction().execute(async (trx) => {
      const user = await lockUser(trx, { id: userId }, ['credential_epoch', 'banned', 'ban_expires'], 'share')
      if (!user || user.credentialEpoch !== credential.epoch) throw staleSignIn()
      // Every sign-in path checks the ban first (banHolds); this is the last word, whatever the path.
      if (isBanned(user, now)) throw bannedUser()
      await insertSession(trx, { ...stored, emailProvenAt: options.emailProven ? now : null })
      return alongside?.(trx, { id: stored.id })
    })
    const { id, ipAddress, userAgent, expiresAt, impersonatedBy } = stored
    return {
      token,
      session: { id, userId, expiresAt, createdAt: now, updatedAt: now, ipAddress, userAgent, impersonatedBy },
      alongside: done,
    }
  }

  /**
   * Validates a session by its token's hash (the session cookie remembers the hash of a value it
   * verified): from memory when the cache holds it (cache.ts says why that is as strict as the
   * database: a revoked session fails on the next request everywhere), else from the database. A
   * cached session that needs no write (neither ended nor due for renewal) is answered at once,
   * without a promise: that is nearly every request.
   */
  validateHash(tokenHash: string): MaybePromise<ValidSession | null> {
    const cached = this.cache?.get(tokenHash)
    if (cached && this.standing(cached, this.clock.now()) === 'valid') {
      return { user: cached.user, session: cached.session, fresh: false }
    }
    return this.validateFound(tokenHash, cached)
  }

  /**
   * lucia's rule on app.clock: a session has ended once `now >= expiresAt` (or a ban holds), and is
   * renewed when less than half of its own lifetime is left (30 days, or a day for a browser session).
   */
  private standing({ session, user }: CachedSession, now: Date): 'valid' | 'ended' | 'renew' {
    // A ban ends the user's sessions; one that exists anyway (a sign-in that raced the ban, a ban
    // set by SQL) is refused and ended too.
    if (now.getTime() >= session.expiresAt.getTime() || isBanned(user, now)) return 'ended'
    // An impersonation keeps the end it was given (at most an hour): it is never renewed.
    if (session.impersonatedBy !== null) return 'valid'
    const lifetime = session.rememberMe ? this.ttlMs : BROWSER_SESSION_MS
    return now.getTime() >= session.expiresAt.getTime() - lifetime / 2 ? 'renew' : 'valid'
  }

  private async validateFound(tokenHash: string, cached: CachedSession | undefined): Promise<ValidSession | null> {
    const found = cached ?? (await this.read(tokenHash))
    if (!found) return null
    const now = this.clock.now()
    const standing = this.standing(found, now)
    if (standing === 'ended') {
      this.cache?.forget(tokenHash)
      await this.lucia.invalidateSession(tokenHash)
      return null
    }
    if (standing === 'valid') return { user: found.user, session: found.session, fresh: false }
    // Renewed once per half-lifetime, so reads never invalidate the cache. Only a remembered
    // session's cookie carries the expiry; a browser session's cookie has none to renew.
    const session = { ...found.session, expiresAt: this.expiryFrom(now, found.session.rememberMe), updatedAt: now }
    this.cache?.forget(tokenHash)
    await setSessionExpiry(this.db, tokenHash, session.expiresAt, now)
    return { user: found.user, session, fresh: session.rememberMe }
  }

  /** The database's answer, kept in memory when nothing invalidated it while it was read. */
  private async read(tokenHash: string): Promise<CachedSession | undefined> {
    const ticket = this.cache?.ticket()
    const found = await findSessionByTokenHash(this.db, tokenHash)
    if (found && ticket !== undefined) this.cache!.put(tokenHash, found, ticket)
    return found
  }

  async revokeByToken(token: string): Promise<void> {
    const tokenHash = hashToken(token)
    this.cache?.forget(tokenHash)
    await this.lucia.invalidateSession(tokenHash)
  }

  /** Revokes one session of a user by its public id (in the caller's transaction when given); false when there is no such session of theirs. */
  revokeById(userId: string, publicId: string, trx?: Trx): Promise<boolean> {
    return deleteSessionOfUser(trx ?? this.db, userId, publicId)
  }

  /** Ends every session of the user, except the one with public id `exceptId` when given (endSessionsOfUser). */
  revokeAll(userId: string, exceptId?: string): Promise<number> {
    return endSessionsOfUser(this.db, userId, { except: exceptId })
  }

  list(userId: string): Promise<SessionView[]> {
    return listLiveSessions(this.db, userId, this.clock.now())
  }
}
