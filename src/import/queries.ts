// Kysely functions of the import: chunked reads that compare a batch with the database, and
// multi-row writes (one statement per table and batch).
import { sql } from 'kysely'
import { json, type Database, type Executor, type Trx } from '../../db/index.js'
import { CREDENTIAL } from '../auth/core/queries.js'
import type { Plan } from '../shared/plans.js'
import type { Role } from '../shared/roles.js'
import type { ImportSection } from './tables.js'

/** A column of a batch and its Postgres type. */
type Column<R> = readonly [keyof R & string, string]

/**
 * The rows of a batch as `select * from unnest($1::text[], $2::...)`: one array parameter per
 * column instead of one parameter per value, which keeps a 1000-row insert cheap to build and parse.
 */
function unnest<R>(rows: R[], columns: ReadonlyArray<Column<R>>) {
  return sql`select * from unnest(${sql.join(columns.map(([column, type]) => sql`${rows.map((r) => r[column])}::${sql.raw(type)}[]`))})`
}

interface OnConflict<R> {
  /** The unique key an existing row is found by. */
  key: ReadonlyArray<keyof R & string>
  /** Columns an existing row keeps besides its key; every other column takes the batch's value. */
  keep?: ReadonlyArray<keyof R & string>
  /** When set, an existing row's updated_at becomes this time instead of the batch's value. */
  touchedAt?: Date
}

/**
 * The one upsert of the import: inserts the batch in one statement, and rewrites the rows that
 * already exist (`on conflict (key) do update set` every column but the key and `keep`).
 */
async function upsert<R>(
  trx: Trx,
  table: keyof Database & string,
  columns: ReadonlyArray<Column<R>>,
  rows: R[],
  on: OnConflict<R>,
): Promise<void> {
  if (rows.length === 0) return
  const fixed = new Set<string>([...on.key, ...(on.keep ?? [])])
  const names = columns.map(([column]) => column)
  const value = (column: string) => (column === 'updated_at' && on.touchedAt ? on.touchedAt : sql.ref(`excluded.${column}`))
  const set = names.filter((column) => !fixed.has(column)).map((column) => sql`${sql.ref(column)} = ${value(column)}`)
  await sql`insert into ${sql.table(table)} (${sql.join(names.map((column) => sql.ref(column)))}) ${unnest(rows, columns)}
    on conflict (${sql.join(on.key.map((column) => sql.ref(column)))}) do update set ${sql.join(set)}`.execute(trx)
}

interface ImportRecord {
  sourceDigest: string | null
  writtenDigest: string | null
}

export async function findImportRecords(
  db: Executor,
  section: ImportSection,
  keys: string[],
): Promise<Map<string, ImportRecord>> {
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

/** The account rows of `providerId` whose `by` column is one of `values`. */
async function accountsOf(db: Executor, providerId: string, by: 'user_id' | 'account_id', values: string[]) {
  if (values.length === 0) return []
  return db
    .selectFrom('account')
    .select(['user_id', 'account_id', 'password_hash'])
    .where('provider_id', '=', providerId)
    .where(by, 'in', values)
    .execute()
}

export async function findCredentialHashes(db: Executor, userIds: string[]): Promise<Map<string, string | null>> {
  const rows = await accountsOf(db, CREDENTIAL, 'user_id', userIds)
  return new Map(rows.map((r) => [r.user_id, r.password_hash]))
}

/** accountId -> user id of the provider links with these subjects. */
export async function findProviderAccounts(db: Executor, providerId: string, accountIds: string[]): Promise<Map<string, string>> {
  const rows = await accountsOf(db, providerId, 'account_id', accountIds)
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
  trx: Trx,
  records: Array<{ section: ImportSection; key: string; sourceDigest: string | null; writtenDigest?: string | null }>,
  now: Date,
): Promise<void> {
  const rows = records.map((r) => ({
    section: r.section,
    source_key: r.key,
    source_digest: r.sourceDigest,
    written_digest: r.writtenDigest ?? null,
    created_at: now,
    updated_at: now,
  }))
  await upsert(
    trx,
    'import_record',
    [
      ['section', 'text'],
      ['source_key', 'text'],
      ['source_digest', 'text'],
      ['written_digest', 'text'],
      ['created_at', 'timestamptz'],
      ['updated_at', 'timestamptz'],
    ],
    rows,
    { key: ['section', 'source_key'], keep: ['created_at'], touchedAt: now },
  )
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
 * Creates the new users and rewrites the corrected ones, a corrected creation date included. The
 * reset flag is set only on creation: on an existing user it follows the credential
 * (setResetFlags), not the profile.
 */
export async function upsertUsers(trx: Trx, rows: UserValues[], now: Date): Promise<void> {
  await upsert(
    trx,
    'user',
    [
      ['id', 'text'],
      ['name', 'text'],
      ['email', 'text'],
      ['email_verified', 'boolean'],
      ['image', 'text'],
      ['role', 'text'],
      ['plan', 'text'],
      ['plan_expires_at', 'timestamptz'],
      ['password_reset_required', 'boolean'],
      ['created_at', 'timestamptz'],
      ['updated_at', 'timestamptz'],
    ],
    rows,
    { key: ['id'], keep: ['password_reset_required'], touchedAt: now },
  )
}

export async function setResetFlags(trx: Trx, userIds: string[], required: boolean, now: Date): Promise<void> {
  if (userIds.length === 0) return
  await trx.updateTable('user').set({ password_reset_required: required, updated_at: now }).where('id', 'in', userIds).execute()
}

interface AccountValues {
  id: string
  user_id: string
  provider_id: string
  account_id: string
  password_hash: string | null
  created_at: Date
  updated_at: Date
}

const ACCOUNT_COLUMNS: ReadonlyArray<Column<AccountValues>> = [
  ['id', 'text'],
  ['user_id', 'text'],
  ['provider_id', 'text'],
  ['account_id', 'text'],
  ['password_hash', 'text'],
  ['created_at', 'timestamptz'],
  ['updated_at', 'timestamptz'],
]

interface AccountRow {
  id: string
  userId: string
  providerId: string
  accountId: string
  passwordHash: string | null
}

/** Accounts by (provider, account id); an existing one keeps the columns named in `keep`. */
function upsertAccounts(trx: Trx, rows: AccountRow[], keep: Array<keyof AccountValues>, now: Date): Promise<void> {
  return upsert(
    trx,
    'account',
    ACCOUNT_COLUMNS,
    rows.map((r) => ({
      id: r.id,
      user_id: r.userId,
      provider_id: r.providerId,
      account_id: r.accountId,
      password_hash: r.passwordHash,
      created_at: now,
      updated_at: now,
    })),
    { key: ['provider_id', 'account_id'], keep, touchedAt: now },
  )
}

/** A rewritten password replaces the hash only: the credential keeps its id, owner and creation time. */
export async function upsertCredentials(
  trx: Trx,
  rows: Array<{ id: string; userId: string; passwordHash: string }>,
  now: Date,
): Promise<void> {
  const credentials = rows.map((r) => ({ ...r, providerId: CREDENTIAL, accountId: r.userId }))
  await upsertAccounts(trx, credentials, ['id', 'user_id', 'created_at'], now)
}

export async function deleteCredentials(trx: Trx, userIds: string[]): Promise<void> {
  if (userIds.length === 0) return
  await trx.deleteFrom('account').where('provider_id', '=', CREDENTIAL).where('user_id', 'in', userIds).execute()
}

/** A provider link that moved changes its owner only. */
export async function upsertProviderAccounts(
  trx: Trx,
  rows: Array<{ id: string; userId: string; providerId: string; accountId: string }>,
  now: Date,
): Promise<void> {
  await upsertAccounts(
    trx,
    rows.map((r) => ({ ...r, passwordHash: null })),
    ['id', 'password_hash', 'created_at'],
    now,
  )
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

export async function upsertJournalEntries(trx: Trx, rows: JournalEntryValues[]): Promise<void> {
  await upsert(
    trx,
    'journal_entry',
    [
      ['id', 'text'],
      ['user_id', 'text'],
      ['content', 'text'],
      ['mood', 'smallint'],
      ['mood_label', 'text'],
      ['tags', 'jsonb'],
      ['entry_date', 'date'],
      ['prompt_id', 'text'],
      ['created_at', 'timestamptz'],
      ['updated_at', 'timestamptz'],
    ],
    rows.map((r) => ({ ...r, tags: json(r.tags) })),
    { key: ['id'] },
  )
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

export async function upsertCompatibilityResults(trx: Trx, rows: CompatibilityResultValues[]): Promise<void> {
  await upsert(
    trx,
    'compatibility_result',
    [
      ['id', 'text'],
      ['user_id', 'text'],
      ['partner', 'jsonb'],
      ['systems', 'jsonb'],
      ['score', 'smallint'],
      ['summary', 'jsonb'],
      ['deep_insights', 'jsonb'],
      ['deep_insights_unlocked', 'boolean'],
      ['payment_id', 'text'],
      ['created_at', 'timestamptz'],
      ['updated_at', 'timestamptz'],
    ],
    rows.map((r) => ({
      ...r,
      partner: json(r.partner),
      systems: json(r.systems),
      summary: json(r.summary),
      deep_insights: r.deep_insights === null ? null : json(r.deep_insights),
    })),
    { key: ['id'] },
  )
}

export interface ConsentValues {
  id: string
  user_id: string
  type: 'terms' | 'privacy' | 'marketing' | 'analytics' | 'ai_processing'
  version: string
  granted: boolean
  created_at: Date
}

export async function upsertConsents(trx: Trx, rows: ConsentValues[]): Promise<void> {
  await upsert(
    trx,
    'consent_record',
    [
      ['id', 'text'],
      ['user_id', 'text'],
      ['type', 'text'],
      ['version', 'text'],
      ['granted', 'boolean'],
      ['created_at', 'timestamptz'],
    ],
    rows,
    { key: ['id'] },
  )
}
