import type { Kysely } from 'kysely'
import type { Trx } from '../../db/index.js'
import type { SectionKey } from './schemas.js'

/**
 * Every table that holds records about a user, and how to find them. A new domain that stores
 * user data adds one line here (test/personal-data/personal-data.test.ts lists the tables it expects).
 */
const SECTIONS = [
  // An impersonation's `impersonator_session_id` is the administrator's session (migration 0021_impersonation): not theirs to read.
  { key: 'sessions', table: 'session', owner: 'user_id', order: 'created_at', internal: 'impersonator_session_id' },
  { key: 'accounts', table: 'account', owner: 'user_id', order: 'created_at' },
  { key: 'verifications', table: 'verification', owner: 'user_id', order: 'created_at' },
  { key: 'journalEntries', table: 'journal_entry', owner: 'user_id', order: 'created_at' },
  { key: 'compatibilityResults', table: 'compatibility_result', owner: 'user_id', order: 'created_at' },
  { key: 'deepInsightsPurchases', table: 'deep_insights_purchase', owner: 'user_id', order: 'created_at' },
  // `grant_seq` orders every user's grants (migration 0017): not theirs to read.
  { key: 'payments', table: 'payment', owner: 'user_id', order: 'created_at', internal: 'grant_seq' },
  { key: 'usageCounters', table: 'usage_counter', owner: 'user_id', order: 'period_start' },
  // `seq` orders decisions of the same instant; it counts every user's decisions, so it is not theirs to read.
  { key: 'consents', table: 'consent_record', owner: 'user_id', order: ['created_at', 'seq'], internal: 'seq' },
  { key: 'auditEvents', table: 'audit_event', owner: ['actor_id', 'target_id'], order: 'at' },
  // The secret and the backup codes' hashes are never exported (secret-like column names); what is: whether and since when.
  { key: 'twoFactor', table: 'two_factor', owner: 'user_id', order: 'created_at' },
  { key: 'twoFactorBackupCodes', table: 'two_factor_backup_code', owner: 'user_id', order: 'code_hash' },
  // The devices the account signed in from: when first and last seen (the hash is never exported).
  { key: 'knownDevices', table: 'known_device', owner: 'user_id', order: 'first_seen_at' },
  // Public keys and their names: nothing in a passkey's row lets anyone sign in.
  { key: 'passkeys', table: 'passkey', owner: 'user_id', order: 'created_at' },
] as const satisfies ReadonlyArray<{
  key: SectionKey
  table: string
  owner: string | readonly string[]
  order: string | readonly string[]
  /** A column kept out of the export: an ordering number across all users. */
  internal?: string
}>

// Every section of the export's schema (schemas.ts) has its table here.
const everySection: [Exclude<SectionKey, (typeof SECTIONS)[number]['key']>] extends [never] ? true : never = true
void everySection

export type { SectionKey }
export const EXPORTED_TABLES: readonly string[] = SECTIONS.map((s) => s.table)

export type Row = Record<string, unknown>

/** The user's row and the rows of every section, every column as stored but a section's internal one. */
export async function readPersonalData(trx: Trx, userId: string): Promise<{ user: Row; sections: Record<SectionKey, Row[]> }> {
  // Sections are read generically by table name.
  // biome-ignore lint/suspicious/noExplicitAny: the export reads every table of the user generically, by name
  const db = trx as unknown as Kysely<any>
  const user: Row = await db.selectFrom('user').selectAll().where('id', '=', userId).executeTakeFirstOrThrow()
  const sections = {} as Record<SectionKey, Row[]>
  for (const section of SECTIONS) {
    const owners: readonly string[] = typeof section.owner === 'string' ? [section.owner] : section.owner
    const internal = 'internal' in section ? section.internal : undefined
    const order: readonly string[] = typeof section.order === 'string' ? [section.order] : section.order
    let query = db
      .selectFrom(section.table)
      .selectAll()
      .where((eb) => eb.or(owners.map((column) => eb(column, '=', userId))))
    for (const column of order) query = query.orderBy(column)
    const rows: Row[] = await query.execute()
    if (internal !== undefined) for (const row of rows) delete row[internal]
    sections[section.key] = rows
  }
  return { user, sections }
}
