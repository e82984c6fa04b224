// The user's personal data (GDPR): everything held about them as one document, and erasure.
import type { DB } from '../../db/index.js'
import { forUser, type PasswordHasher } from '../auth/password/password.js'
import { findPasswordHash } from '../auth/core/queries.js'
import { recordUserEvent } from '../shared/audit.js'
import type { Clock } from '../shared/clock.js'
import type { RequestContext } from '../shared/context.js'
import { AppError } from '../shared/errors.js'
import { assertDeletable, eraseAccount } from '../user/erase.js'
import type { SessionUser } from '../user/types.js'
import { readPersonalData, type Row, type SectionKey } from './queries.js'

export interface PersonalDataDeps {
  db: DB
  clock: Clock
  hasher: PasswordHasher
}

/** Rows with camelCase keys and their Date values; no secret column. */
export type PersonalData = { exportedAt: Date; profile: Row } & Record<SectionKey, Row[]>

// Never exported: the session token hash, password hashes, provider tokens, any secret, and a
// passkey's user handle (what its authenticator answers with: a sign-in's key, not the user's data).
const SECRET_COLUMN = /(^|_)(hash|token|secret|handle)s?($|_)|password_hash/
/**
 * What a pending emailed link or code keeps in `verification.data` that is the user's to read: the
 * addresses and the facts of a notice. Everything else there is the proof itself or the machinery
 * of a ceremony (a code's MAC, a WebAuthn challenge and user handle, attempts, redirect targets):
 * listed by what may go out, so a secret added there later stays in.
 */
const PUBLIC_VERIFICATION_DATA = ['email', 'newEmail', 'restore', 'event', 'at']

const camel = (column: string) => column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())

function withoutSecrets(row: Row): Row {
  return Object.fromEntries(
    Object.entries(row)
      .filter(([column]) => !SECRET_COLUMN.test(column))
      .map(([column, value]) => [camel(column), value]),
  )
}

function publicVerification(row: Row): Row {
  const data = (row.data ?? {}) as Record<string, unknown>
  return { ...row, data: Object.fromEntries(PUBLIC_VERIFICATION_DATA.filter((k) => k in data).map((k) => [k, data[k]])) }
}

export async function exportMyData(deps: PersonalDataDeps, ctx: RequestContext, user: SessionUser): Promise<PersonalData> {
  return deps.db.transaction().execute(async (trx) => {
    const { user: profile, sections } = await readPersonalData(trx, user.id)
    const document: Record<string, unknown> = { exportedAt: deps.clock.now(), profile: withoutSecrets(profile) }
    for (const [key, rows] of Object.entries(sections)) {
      document[key] = (key === 'verifications' ? rows.map(publicVerification) : rows).map(withoutSecrets)
    }
    await recordUserEvent(trx, ctx, user.id, 'personal_data.exported')
    return document as PersonalData
  })
}

/** An account without a password proves itself by a recent sign-in instead. */
const RECENT_SIGN_IN_MS = 10 * 60 * 1000

const invalidPassword = () => new AppError(401, 'INVALID_PASSWORD', 'Password is incorrect')

/** Deletes the account of `user`, signed in with `session`, once the password (or a recent sign-in) confirms it. */
export async function deleteMyAccount(
  deps: PersonalDataDeps,
  ctx: RequestContext,
  user: SessionUser,
  session: { createdAt: Date },
  password: string | undefined,
): Promise<void> {
  assertDeletable(user)
  const passwordHash = await findPasswordHash(deps.db, user.id)
  const confirmed = passwordHash
    ? password !== undefined && (await deps.hasher.verify(passwordHash, password, forUser(ctx, user.id)))
    : deps.clock.now().getTime() - session.createdAt.getTime() < RECENT_SIGN_IN_MS
  if (!confirmed) {
    await recordUserEvent(deps.db, ctx, user.id, 'account.delete_refused')
    throw invalidPassword()
  }
  await deps.db.transaction().execute((trx) => eraseAccount(trx, user))
}
