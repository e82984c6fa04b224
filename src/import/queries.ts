// Kysely functions of the import: chunked reads that compare a batch with the database, and
// multi-row writes (one statement per table and batch).
import { sql, type Kysely, type Transaction } from 'kysely'
import { json, type Database } from '../../db/index.js'
import { CREDENTIAL } from '../auth/queries.js'
import type { Plan, Role } from '../auth/tables.js'
import type { ImportSection } from './tables.js'
import type { Executor } from '../../db/index.js'


/**
 * The rows of a batch as `select * from unnest($1::text[], $2::...)`: one array parameter per
 * column instead of one parameter per value, which keeps a 1000-row insert cheap to build and parse.
 */
function unnest<R>(rows: R[], columns: ReadonlyArray<readonly [keyof R & string, string]>) {
  return sql`select * from unnest(${sql.join(columns.map(([column, type]) => sql`${rows.map((r) => r[column])}::${sql.raw(type)}[]`))})`
}
const names = <C extends string>(columns: ReadonlyArray<readonly [C, string]>): C[] => columns.map(([c]) => c)

export interface ImportRecord {
  sourceDigest: string | null
  writtenDigest: string | null
}

export async function findImportRecords(db: Executor, section: ImportSection, keys: string[]): Promise<Map<string, ImportRecord>> {
  if (keys.length === 0) return new Map()
  const rows = await db
    .selectFrom('import_record')
    .select(['source_key', 'source_digest', 'written_digest'])
    .where('section', '=', section)
    .where('source_key', 'in', keys)
    .execute()
  return new Map(rows.map((r) => [r.source_key, { sourceDigest: r.source_digest, writtenDigest: r.written_digest }]))
}

export async function findUsersByIds(db: Executor, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map()
  const rows = await db.selectFrom('user').select(['id', 'email']).where('id', 'in', ids).execute()
  return new Map(rows.map((r) => [r.id, r.email]))
}

/** email -> id of the users holding these (lowercased) emails. */
export async function findUserIdsByEmails(db: Executor, emails: string[]): Promise<Map<string, string>> {
  if (emails.length === 0) return new Map()
  const rows = await db.selectFrom('user').select(['id', 'email']).where('email', 'in', emails).execute()
  return new Map(rows.map((r) => [r.email, r.id]))
}

export async function findCredentialHashes(db: Executor, userIds: string[]): Promise<Map<string, string | null>> {
  if (userIds.length === 0) return new Map()
  const rows = await db
    .selectFrom('account')
    .select(['user_id', 'password_hash'])
    .where('provider_id', '=', CREDENTIAL)
    .where('user_id', 'in', userIds)
    .execute()
  return new Map(rows.map((r) => [r.user_id, r.password_hash]))
}

/** accountId -> user id of the provider links with these subjects. */
export async function findProviderAccounts(db: Executor, providerId: string, accountIds: string[]): Promise<Map<string, string>> {
  if (accountIds.length === 0) return new Map()
  const rows = await db
    .selectFrom('account')
    .select(['account_id', 'user_id'])
    .where('provider_id', '=', providerId)
    .where('account_id', 'in', accountIds)
    .execute()
  return new Map(rows.map((r) => [r.account_id, r.user_id]))
}

export type OwnedTable = 'journal_entry' | 'compatibility_result' | 'consent_record'

/** id -> owner of the rows of `table` with these ids (consents may have lost their owner). */
export async function findOwners(db: Executor, table: OwnedTable, ids: string[]): Promise<Map<string, string | null>> {
  if (ids.length === 0) return new Map()
  const rows = await db.selectFrom(table).select(['id', 'user_id']).where('id', 'in', ids).execute()
  return new Map(rows.map((r) => [r.id, r.user_id]))
}

export async function upsertImportRecords(
  trx: Transaction<Database>,
  records: Array<{ section: ImportSection; key: string; sourceDigest: string | null; writtenDigest?: string | null }>,
  now: Date,
): Promise<void> {
  if (records.length === 0) return
  const rows = records.map((r) => ({
    section: r.section, source_key: r.key, source_digest: r.sourceDigest, written_digest: r.writtenDigest ?? null, created_at: now, updated_at: now,
  }))
  const columns = [
    ['section', 'text'], ['source_key', 'text'], ['source_digest', 'text'], ['written_digest', 'text'],
    ['created_at', 'timestamptz'], ['updated_at', 'timestamptz'],
  ] as const
  await trx
    .insertInto('import_record')
    .columns(names(columns))
    .expression(unnest(rows, columns))
    .onConflict((oc) => oc.columns(['section', 'source_key']).doUpdateSet((eb) => ({
      source_digest: eb.ref('excluded.source_digest'),
      written_digest: eb.ref('excluded.written_digest'),
      updated_at: now,
    })))
    .execute()
}

export interface UserValues {
  id: string
  name: string
  email: string
  email_verified: boolean
  image: string | null
  role: Role
  plan: Plan
  plan_expires_at: Date | null
  password_reset_required: boolean
  created_at: Date
  updated_at: Date
}

/**
 * Creates the new users and rewrites the corrected ones. The reset flag is set only on creation:
 * on an existing user it follows the credential (setResetFlags), not the profile.
 */
export async function upsertUsers(trx: Transaction<Database>, rows: UserValues[], now: Date): Promise<void> {
  if (rows.length === 0) return
  const columns = [
    ['id', 'text'], ['name', 'text'], ['email', 'text'], ['email_verified', 'boolean'], ['image', 'text'], ['role', 'text'],
    ['plan', 'text'], ['plan_expires_at', 'timestamptz'], ['password_reset_required', 'boolean'],
    ['created_at', 'timestamptz'], ['updated_at', 'timestamptz'],
  ] as const
  await trx
    .insertInto('user')
    .columns(names(columns))
    .expression(unnest(rows, columns))
    .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({
      name: eb.ref('excluded.name'),
      email: eb.ref('excluded.email'),
      email_verified: eb.ref('excluded.email_verified'),
      image: eb.ref('excluded.image'),
      role: eb.ref('excluded.role'),
      plan: eb.ref('excluded.plan'),
      plan_expires_at: eb.ref('excluded.plan_expires_at'),
      // A corrected creation date is part of the correction.
      ...({ created_at: sql`excluded.created_at` } as object),
      updated_at: now,
    })))
    .execute()
}

export async function setResetFlags(trx: Transaction<Database>, userIds: string[], required: boolean, now: Date): Promise<void> {
  if (userIds.length === 0) return
  await trx
    .updateTable('user')
    .set({ password_reset_required: required, updated_at: now })
    .where('id', 'in', userIds)
    .execute()
}

const ACCOUNT_COLUMNS = [
  ['id', 'text'], ['user_id', 'text'], ['provider_id', 'text'], ['account_id', 'text'], ['password_hash', 'text'],
  ['created_at', 'timestamptz'], ['updated_at', 'timestamptz'],
] as const

export async function upsertCredentials(
  trx: Transaction<Database>,
  rows: Array<{ id: string; userId: string; passwordHash: string }>,
  now: Date,
): Promise<void> {
  if (rows.length === 0) return
  await trx
    .insertInto('account')
    .columns(names(ACCOUNT_COLUMNS))
    .expression(unnest(rows.map((r) => ({
      id: r.id, user_id: r.userId, provider_id: CREDENTIAL, account_id: r.userId, password_hash: r.passwordHash,
      created_at: now, updated_at: now,
    })), ACCOUNT_COLUMNS))
    .onConflict((oc) => oc.columns(['provider_id', 'account_id']).doUpdateSet((eb) => ({
      password_hash: eb.ref('excluded.password_hash'),
      updated_at: now,
    })))
    .execute()
}

export async function deleteCredentials(trx: Transaction<Database>, userIds: string[]): Promise<void> {
  if (userIds.length === 0) return
  await trx.deleteFrom('account').where('provider_id', '=', CREDENTIAL).where('user_id', 'in', userIds).execute()
}

export async function upsertProviderAccounts(
  trx: Transaction<Database>,
  rows: Array<{ id: string; userId: string; providerId: string; accountId: string }>,
  now: Date,
): Promise<void> {
  if (rows.length === 0) return
  await trx
    .insertInto('account')
    .columns(names(ACCOUNT_COLUMNS))
    .expression(unnest(rows.map((r) => ({
      id: r.id, user_id: r.userId, provider_id: r.providerId, account_id: r.accountId, password_hash: null as string | null,
      created_at: now, updated_at: now,
    })), ACCOUNT_COLUMNS))
    .onConflict((oc) => oc.columns(['provider_id', 'account_id']).doUpdateSet((eb) => ({
      user_id: eb.ref('excluded.user_id'),
      updated_at: now,
    })))
    .execute()
}

export interface JournalEntryValues {
  id: string
  user_id: string
  content: string
  mood: number
  mood_label: string | null
  tags: string[]
  entry_date: string
  prompt_id: string | null
  created_at: Date
  updated_at: Date
}

export async function upsertJournalEntries(trx: Transaction<Database>, rows: JournalEntryValues[]): Promise<void> {
  if (rows.length === 0) return
  const columns = [
    ['id', 'text'], ['user_id', 'text'], ['content', 'text'], ['mood', 'smallint'], ['mood_label', 'text'], ['tags', 'jsonb'],
    ['entry_date', 'date'], ['prompt_id', 'text'], ['created_at', 'timestamptz'], ['updated_at', 'timestamptz'],
  ] as const
  await trx
    .insertInto('journal_entry')
    .columns(names(columns))
    .expression(unnest(rows.map((r) => ({ ...r, tags: json(r.tags) })), columns))
    .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({
      user_id: eb.ref('excluded.user_id'),
      content: eb.ref('excluded.content'),
      mood: eb.ref('excluded.mood'),
      mood_label: eb.ref('excluded.mood_label'),
      tags: eb.ref('excluded.tags'),
      entry_date: eb.ref('excluded.entry_date'),
      prompt_id: eb.ref('excluded.prompt_id'),
      ...({ created_at: sql`excluded.created_at` } as object),
      updated_at: eb.ref('excluded.updated_at'),
    })))
    .execute()
}

export interface CompatibilityResultValues {
  id: string
  user_id: string
  partner: Record<string, unknown>
  systems: string[]
  score: number
  summary: Record<string, unknown>
  deep_insights: Record<string, unknown> | null
  deep_insights_unlocked: boolean
  payment_id: string | null
  created_at: Date
  updated_at: Date
}

export async function upsertCompatibilityResults(trx: Transaction<Database>, rows: CompatibilityResultValues[]): Promise<void> {
  if (rows.length === 0) return
  const columns = [
    ['id', 'text'], ['user_id', 'text'], ['partner', 'jsonb'], ['systems', 'jsonb'], ['score', 'smallint'], ['summary', 'jsonb'],
    ['deep_insights', 'jsonb'], ['deep_insights_unlocked', 'boolean'], ['payment_id', 'text'],
    ['created_at', 'timestamptz'], ['updated_at', 'timestamptz'],
  ] as const
  await trx
    .insertInto('compatibility_result')
    .columns(names(columns))
    .expression(unnest(rows.map((r) => ({
      ...r,
      partner: json(r.partner),
      systems: json(r.systems),
      summary: json(r.summary),
      deep_insights: r.deep_insights === null ? null : json(r.deep_insights),
    })), columns))
    .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({
      user_id: eb.ref('excluded.user_id'),
      partner: eb.ref('excluded.partner'),
      systems: eb.ref('excluded.systems'),
      score: eb.ref('excluded.score'),
      summary: eb.ref('excluded.summary'),
      deep_insights: eb.ref('excluded.deep_insights'),
      deep_insights_unlocked: eb.ref('excluded.deep_insights_unlocked'),
      payment_id: eb.ref('excluded.payment_id'),
      ...({ created_at: sql`excluded.created_at` } as object),
      updated_at: eb.ref('excluded.updated_at'),
    })))
    .execute()
}

export interface ConsentValues {
  id: string
  user_id: string
  type: 'terms' | 'privacy' | 'marketing' | 'analytics' | 'ai_processing'
  version: string
  granted: boolean
  created_at: Date
}

export async function upsertConsents(trx: Transaction<Database>, rows: ConsentValues[]): Promise<void> {
  if (rows.length === 0) return
  const columns = [
    ['id', 'text'], ['user_id', 'text'], ['type', 'text'], ['version', 'text'], ['granted', 'boolean'], ['created_at', 'timestamptz'],
  ] as const
  await trx
    .insertInto('consent_record')
    .columns(names(columns))
    .expression(unnest(rows, columns))
    .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({
      user_id: eb.ref('excluded.user_id'),
      type: eb.ref('excluded.type'),
      version: eb.ref('excluded.version'),
      granted: eb.ref('excluded.granted'),
      ...({ created_at: sql`excluded.created_at` } as object),
    })))
    .execute()
}
