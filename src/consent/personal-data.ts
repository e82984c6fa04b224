// The user's personal data (GDPR): everything held about them as one document, and erasure.
import type { FastifyInstance } from 'fastify'
import { sql, type Kysely, type Transaction } from 'kysely'
import type { Database } from '../../db/schema.js'
import { recordAudit } from '../shared/audit.js'
import type { SessionUser } from '../auth/session/sessions.js'
import { findPasswordHash } from '../auth/queries.js'
import type { RequestMeta } from '../auth/email/service.js'
import { AppError, forbidden } from '../shared/errors.js'

/**
 * Every table that holds records about a user, and how to find them. A new domain that stores
 * user data adds one line here (test/consent/personal-data.test.ts lists the tables it expects).
 */
const SECTIONS = [
  { key: 'sessions', table: 'session', owner: 'user_id', order: 'created_at' },
  { key: 'accounts', table: 'account', owner: 'user_id', order: 'created_at' },
  { key: 'verifications', table: 'verification', owner: 'user_id', order: 'created_at' },
  { key: 'journalEntries', table: 'journal_entry', owner: 'user_id', order: 'created_at' },
  { key: 'compatibilityResults', table: 'compatibility_result', owner: 'user_id', order: 'created_at' },
  { key: 'deepInsightsPurchases', table: 'deep_insights_purchase', owner: 'user_id', order: 'created_at' },
  { key: 'payments', table: 'payment', owner: 'user_id', order: 'created_at' },
  { key: 'usageCounters', table: 'usage_counter', owner: 'user_id', order: 'period_start' },
  { key: 'consents', table: 'consent_record', owner: 'user_id', order: 'created_at' },
  { key: 'auditEvents', table: 'audit_event', owner: ['actor_id', 'target_id'], order: 'at' },
] as const satisfies ReadonlyArray<{ key: string; table: string; owner: string | readonly string[]; order: string }>

export const EXPORT_SECTION_KEYS = SECTIONS.map((s) => s.key)
export const EXPORTED_TABLES: readonly string[] = SECTIONS.map((s) => s.table)

export type PersonalDataExport = {
  exportedAt: string
  profile: Record<string, unknown>
} & Record<(typeof SECTIONS)[number]['key'], Array<Record<string, unknown>>>

// Never exported: the session token hash, password hashes, provider tokens, any secret.
const SECRET_COLUMN = /(^|_)(hash|token|secret)s?($|_)|password_hash/

const camel = (column: string) => column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())

/** A row as JSON: camelCase keys, ISO dates, secret columns left out. */
function exportRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [column, value] of Object.entries(row)) {
    if (SECRET_COLUMN.test(column)) continue
    out[camel(column)] = value instanceof Date ? value.toISOString() : value
  }
  return out
}

export async function exportMyData(app: FastifyInstance, user: SessionUser, meta: RequestMeta): Promise<PersonalDataExport> {
  return app.db.transaction().execute(async (trx) => {
    // Sections are read generically by table name; every column except secrets is exported.
    const db = trx as unknown as Kysely<any>
    const profile = await db.selectFrom('user').selectAll().where('id', '=', user.id).executeTakeFirstOrThrow()
    const document: Record<string, unknown> = { exportedAt: app.clock.now().toISOString(), profile: exportRow(profile) }
    for (const section of SECTIONS) {
      const owners: readonly string[] = typeof section.owner === 'string' ? [section.owner] : section.owner
      const rows = await db
        .selectFrom(section.table)
        .selectAll()
        .where((eb) => eb.or(owners.map((column) => eb(column, '=', user.id))))
        .orderBy(section.order)
        .execute()
      document[section.key] = rows.map(exportRow)
    }
    await recordAudit(trx, { actorId: user.id, action: 'personal_data.exported', targetType: 'user', targetId: user.id, ip: meta.ip })
    return document as PersonalDataExport
  })
}

/** An account without a password proves itself by a recent sign-in instead. */
export const RECENT_SIGN_IN_MS = 10 * 60 * 1000

const invalidPassword = () => new AppError(401, 'INVALID_PASSWORD', 'Password is incorrect')

/**
 * Deletes the account. The cascade removes sessions, accounts, verifications, journal, results and
 * usage; payments and consents stay with user_id set NULL (anonymised); the audit event of the
 * deletion keeps only the id.
 */
export async function deleteMyAccount(
  app: FastifyInstance,
  user: SessionUser,
  session: { createdAt: Date },
  password: string | undefined,
  meta: RequestMeta,
): Promise<void> {
  // The service must always keep an operator: an owner is removed from the command line.
  if (user.role === 'owner') throw forbidden('An owner account cannot be deleted through the API')
  const passwordHash = await findPasswordHash(app.db, user.id)
  const confirmed = passwordHash
    ? password !== undefined && (await app.hasher.verify(passwordHash, password))
    : app.clock.now().getTime() - session.createdAt.getTime() < RECENT_SIGN_IN_MS
  if (!confirmed) {
    await recordAudit(app.db, { actorId: user.id, action: 'account.delete_refused', targetType: 'user', targetId: user.id, ip: meta.ip })
    throw invalidPassword()
  }
  await app.db.transaction().execute(async (trx) => {
    await anonymiseKeptRecords(trx, user)
    await trx.deleteFrom('user').where('id', '=', user.id).execute()
    // No ip, no email: the event must not put back the personal data the deletion removed.
    await recordAudit(trx, { actorId: user.id, action: 'account.deleted', targetType: 'user', targetId: user.id })
  })
}

async function anonymiseKeptRecords(trx: Transaction<Database>, user: SessionUser): Promise<void> {
  // Consents stay as the record of what was agreed to, no longer tied to a person or a device.
  await trx
    .updateTable('consent_record')
    .set({ user_id: null, ip: null, user_agent: null })
    .where('user_id', '=', user.id)
    .execute()
  // Payments stay for the books. Explicit rather than left to ON DELETE SET NULL, so erasure never
  // depends on how a foreign key was declared.
  await trx.updateTable('payment').set({ user_id: null }).where('user_id', '=', user.id).execute()
  // The audit log keeps ids (accountability) but not the email address, wherever it appears (a
  // failed sign-in, an admin's search): every JSON string equal to it becomes "[deleted]".
  const quoted = JSON.stringify(user.email)
  await sql`
    update audit_event set details = replace(details::text, ${quoted}, '"[deleted]"')::jsonb
    where strpos(details::text, ${quoted}) > 0`.execute(trx)
}
