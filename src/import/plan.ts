// Compares the parsed rows with the database, batch by batch, and decides for each row: create,
// update, unchanged, skip (deleted in the app since an earlier import) or reject. Reads only.
import type { DB } from '../../db/index.js'
import type { PasswordHasher } from '../auth/password/password.js'
import { digestOfStored, storedMatches } from './credentials.js'
import type { ParsedDocument, ParsedRow, ParsedUser } from './parse.js'
import type { Progress } from './progress.js'
import {
  findCredentialHashes,
  findImportRecords,
  findOwners,
  findProviderAccounts,
  findUserIdsByEmails,
  findUsersByIds,
  type OwnedTable,
} from './queries.js'
import type { RowIssue } from './report.js'
import type { ImportAccountInput, SectionName, SectionRows } from './schemas.js'
import type { ImportSection } from './tables.js'

/** `failed` marks a row that the database refused at write time (it is then listed as rejected). */
export type Action = 'create' | 'update' | 'unchanged' | 'failed'

export interface RowPlan<T> {
  parsed: ParsedRow<T>
  action: Action
}

export interface UserPlan {
  parsed: ParsedUser
  action: Action
  profile: 'write' | 'same'
  /** `keep`: the password was changed in the app since the import, and is the user's now. */
  credential: 'write' | 'delete' | 'same' | 'keep'
  /** Digest of the credential the import last wrote (kept in the user's import record). */
  writtenDigest: string | null
  /** The hash to store, computed after planning when `credential` is `write`. */
  stored?: string | null
}

type PlannedSections = { [S in keyof SectionRows]: RowPlan<SectionRows[S]>[] }

export interface ImportPlan extends PlannedSections {
  users: UserPlan[]
  rejected: RowIssue[]
  skipped: RowIssue[]
  warnings: RowIssue[]
  keptSinceChangedInApp: number
}

interface Context {
  db: DB
  hasher: PasswordHasher
  batchSize: number
  progress: Progress
  plan: ImportPlan
}

const DELETED_SINCE = 'deleted in the app since an earlier import; not re-created'

export function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

/** Runs `work` over `items` with at most `concurrency` in flight (Argon2 runs on the libuv pool). */
export async function mapLimit<T, R>(items: T[], concurrency: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length)
  let next = 0
  const lanes = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const i = next++
      results[i] = await work(items[i]!)
    }
  })
  await Promise.all(lanes)
  return results
}

export async function planImport(
  db: DB,
  hasher: PasswordHasher,
  parsed: ParsedDocument,
  options: { batchSize: number; progress: Progress },
): Promise<ImportPlan> {
  const plan: ImportPlan = {
    users: [],
    accounts: [],
    journalEntries: [],
    compatibilityResults: [],
    consents: [],
    rejected: [...parsed.rejected],
    skipped: [],
    warnings: [...parsed.warnings],
    keptSinceChangedInApp: 0,
  }
  const ctx: Context = { db, hasher, plan, ...options }
  await planUsers(ctx, parsed.users)
  const fileUsers = new Set(plan.users.map((u) => u.parsed.key))
  const userExists = existingUsers(ctx, fileUsers)
  await planAccounts(ctx, parsed.accounts, userExists)
  await planOwnedRows(
    ctx,
    'journalEntries',
    'journal_entry',
    'journal_entry',
    parsed.journalEntries,
    plan.journalEntries,
    userExists,
  )
  await planOwnedRows(
    ctx,
    'compatibilityResults',
    'compatibility_result',
    'compatibility_result',
    parsed.compatibilityResults,
    plan.compatibilityResults,
    userExists,
  )
  await planOwnedRows(ctx, 'consents', 'consent', 'consent_record', parsed.consents, plan.consents, userExists)
  return plan
}

async function planUsers(ctx: Context, users: ParsedUser[]): Promise<void> {
  const { db, hasher, plan } = ctx
  ctx.progress.start('checking users', users.length)
  for (const batch of chunks(users, ctx.batchSize)) {
    const ids = batch.map((u) => u.key)
    const [records, emailsById, idsByEmail, hashes] = await Promise.all([
      findImportRecords(db, 'user', ids),
      findUsersByIds(db, ids),
      findUserIdsByEmails(
        db,
        batch.map((u) => u.row.email),
      ),
      findCredentialHashes(db, ids),
    ])
    const decided = await mapLimit(batch, hasher.pool.capacity, async (user): Promise<UserPlan | null> => {
      const issue = { section: 'users' as const, index: user.index, id: user.key }
      const record = records.get(user.key)
      const exists = emailsById.has(user.key)
      if (record && !exists) {
        plan.skipped.push({ ...issue, reason: DELETED_SINCE })
        return null
      }
      if (!record && exists) {
        plan.rejected.push({ ...issue, reason: 'id already belongs to a user that the import did not create' })
        return null
      }
      const profile = exists && record?.sourceDigest === user.digest ? 'same' : 'write'
      const emailOwner = idsByEmail.get(user.row.email)
      if (profile === 'write' && emailOwner !== undefined && emailOwner !== user.key) {
        plan.rejected.push({ ...issue, reason: `email "${user.row.email}" already belongs to another user (id ${emailOwner})` })
        return null
      }
      if (!exists) {
        const credential = user.credential.kind === 'none' ? 'same' : 'write'
        return { parsed: user, action: 'create', profile, credential, writtenDigest: null }
      }
      const writtenDigest = record!.writtenDigest
      const credential = await decideCredential(ctx, user, hashes.get(user.key) ?? null, writtenDigest)
      const changed = profile === 'write' || credential === 'write' || credential === 'delete'
      return { parsed: user, action: changed ? 'update' : 'unchanged', profile, credential, writtenDigest }
    })
    for (const d of decided) if (d) plan.users.push(d)
    ctx.progress.advance(batch.length)
  }
  ctx.progress.finish()
}

/**
 * For a user imported before: the credential is rewritten only while it is still the one the import
 * wrote. A password reset, change or sign-in upgrade since then makes it the user's, and it is kept.
 */
async function decideCredential(
  ctx: Context,
  user: ParsedUser,
  current: string | null,
  written: string | null,
): Promise<UserPlan['credential']> {
  if (digestOfStored(current) !== written) {
    ctx.plan.keptSinceChangedInApp++
    const source = user.credential
    const fileChanged =
      source.kind === 'none' ? written !== null : source.kind === 'kept' ? digestOfStored(source.stored) !== written : false
    if (fileChanged) {
      ctx.plan.warnings.push({
        section: 'users',
        index: user.index,
        id: user.key,
        reason: 'the password in the file changed, but the account changed its password in the app since the import: kept',
      })
    }
    return 'keep'
  }
  if (await storedMatches(ctx.hasher, user.credential, current)) return 'same'
  return user.credential.kind === 'none' ? 'delete' : 'write'
}

/** Whether a user id will exist after the import: a valid user of the file, or one in the database. */
function existingUsers(ctx: Context, fileUsers: Set<string>) {
  return async (userIds: string[]): Promise<Set<string>> => {
    const missing = [...new Set(userIds.filter((id) => !fileUsers.has(id)))]
    const inDb = await findUsersByIds(ctx.db, missing)
    return new Set([...userIds.filter((id) => fileUsers.has(id)), ...inDb.keys()])
  }
}

const orphan = (userId: string) => `orphan: user "${userId}" is neither a valid user of the file nor in the database`

async function planAccounts(
  ctx: Context,
  rows: ParsedRow<ImportAccountInput>[],
  userExists: (ids: string[]) => Promise<Set<string>>,
): Promise<void> {
  ctx.progress.start('checking accounts', rows.length)
  for (const batch of chunks(rows, ctx.batchSize)) {
    const [records, owners, users] = await Promise.all([
      findImportRecords(
        ctx.db,
        'account',
        batch.map((r) => r.key),
      ),
      findProviderAccounts(
        ctx.db,
        'idp',
        batch.map((r) => r.row.accountId),
      ),
      userExists(batch.map((r) => r.row.userId)),
    ])
    for (const parsed of batch) {
      const issue = { section: 'accounts' as const, index: parsed.index, id: null, userId: parsed.row.userId }
      const record = records.get(parsed.key)
      const owner = owners.get(parsed.row.accountId)
      if (record && owner === undefined) {
        ctx.plan.skipped.push({ ...issue, reason: 'link removed in the app since an earlier import; not re-created' })
      } else if (!record && owner !== undefined && owner !== parsed.row.userId) {
        ctx.plan.rejected.push({
          ...issue,
          reason: `provider account "${parsed.row.accountId}" is already linked to another user (id ${owner})`,
        })
      } else if ((record?.sourceDigest === parsed.digest || !record) && owner === parsed.row.userId) {
        ctx.plan.accounts.push({ parsed, action: 'unchanged' })
      } else if (!users.has(parsed.row.userId)) {
        ctx.plan.rejected.push({ ...issue, reason: orphan(parsed.row.userId) })
      } else {
        ctx.plan.accounts.push({ parsed, action: record ? 'update' : 'create' })
      }
    }
    ctx.progress.advance(batch.length)
  }
  ctx.progress.finish()
}

async function planOwnedRows<T extends { id: string; userId: string }>(
  ctx: Context,
  section: SectionName,
  recordSection: ImportSection,
  table: OwnedTable,
  rows: ParsedRow<T>[],
  into: RowPlan<T>[],
  userExists: (ids: string[]) => Promise<Set<string>>,
): Promise<void> {
  ctx.progress.start(`checking ${section}`, rows.length)
  for (const batch of chunks(rows, ctx.batchSize)) {
    const ids = batch.map((r) => r.key)
    const [records, owners, users] = await Promise.all([
      findImportRecords(ctx.db, recordSection, ids),
      findOwners(ctx.db, table, ids),
      userExists(batch.map((r) => r.row.userId)),
    ])
    for (const parsed of batch) {
      const issue = { section, index: parsed.index, id: parsed.id, userId: parsed.row.userId }
      const record = records.get(parsed.key)
      const exists = owners.has(parsed.key)
      if (record && !exists) ctx.plan.skipped.push({ ...issue, reason: DELETED_SINCE })
      else if (!record && exists)
        ctx.plan.rejected.push({ ...issue, reason: 'id already used by a row that the import did not create' })
      else if (record && record.sourceDigest === parsed.digest) into.push({ parsed, action: 'unchanged' })
      else if (!users.has(parsed.row.userId)) ctx.plan.rejected.push({ ...issue, reason: orphan(parsed.row.userId) })
      else into.push({ parsed, action: record ? 'update' : 'create' })
    }
    ctx.progress.advance(batch.length)
  }
  ctx.progress.finish()
}
