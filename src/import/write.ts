// Writes a plan: one transaction per batch, or one transaction for everything (--strict). A batch
// the database refuses is retried row by row, so one bad row costs only itself.
import type { DB, Trx } from '../../db/index.js'
import { todayUtc } from '../shared/dates.js'
import { newId } from '../shared/ids.js'
import { digestOfStored, requiresReset } from './credentials.js'
import type { ImportPlan, RowPlan, UserPlan } from './plan.js'
import { chunks, mapLimit } from './plan.js'
import type { Progress } from './progress.js'
import {
  deleteCredentials,
  setResetFlags,
  upsertCompatibilityResults,
  upsertConsents,
  upsertCredentials,
  upsertImportRecords,
  upsertJournalEntries,
  upsertProviderAccounts,
  upsertUsers,
} from './queries.js'
import type { RowIssue } from './report.js'
import type { SectionName } from './schemas.js'
import type { ImportSection } from './tables.js'

interface Step<T> {
  section: SectionName
  items: T[]
  write: (trx: Trx, items: T[]) => Promise<void>
  issueOf: (item: T) => Omit<RowIssue, 'reason'>
  fail: (item: T) => void
  /** Rows whose order is their meaning (consents: the last decision per type is in force) are written one batch at a time, in file order. */
  ordered?: boolean
}

const dateOr = (iso: string | null, fallback: Date) => (iso ? new Date(iso) : fallback)

/**
 * The timestamps of an imported row: created when the source says (else now); a new row was last
 * updated when the source says (else at creation), an existing one that the import rewrites, now.
 */
function timestamps(row: { createdAt: string | null; updatedAt: string | null }, action: string, now: Date) {
  const createdAt = dateOr(row.createdAt, now)
  return { created_at: createdAt, updated_at: action === 'create' ? dateOr(row.updatedAt, createdAt) : now }
}

function usersStep(plan: ImportPlan, now: Date): Step<UserPlan> {
  return {
    section: 'users',
    items: plan.users.filter((u) => u.action === 'create' || u.action === 'update'),
    issueOf: (u) => ({ section: 'users', index: u.parsed.index, id: u.parsed.key }),
    fail: (u) => {
      u.action = 'failed'
    },
    write: async (trx, items) => {
      const profiles = items.filter((u) => u.action === 'create' || u.profile === 'write')
      await upsertUsers(
        trx,
        profiles.map((u) => {
          const row = u.parsed.row
          return {
            id: row.id,
            name: row.name,
            email: row.email,
            email_verified: row.emailVerified,
            image: row.image,
            role: row.role,
            plan: row.plan,
            plan_expires_at: row.planExpiresAt ? new Date(row.planExpiresAt) : null,
            password_reset_required: requiresReset(u.parsed.credential),
            ...timestamps(row, u.action, now),
          }
        }),
        now,
      )
      const written = items.filter((u) => u.credential === 'write')
      await upsertCredentials(
        trx,
        written.map((u) => ({ id: newId(), userId: u.parsed.key, passwordHash: u.stored! })),
        now,
      )
      const deleted = items.filter((u) => u.credential === 'delete')
      await deleteCredentials(
        trx,
        deleted.map((u) => u.parsed.key),
      )
      // On an existing user the reset flag follows the credential just written.
      const existing = [...written, ...deleted].filter((u) => u.action === 'update')
      await setResetFlags(
        trx,
        existing.filter((u) => u.credential === 'write' && requiresReset(u.parsed.credential)).map((u) => u.parsed.key),
        true,
        now,
      )
      await setResetFlags(
        trx,
        existing.filter((u) => u.credential === 'delete' || !requiresReset(u.parsed.credential)).map((u) => u.parsed.key),
        false,
        now,
      )
      // One record per user: the profile's digest and the digest of the credential last written.
      await upsertImportRecords(
        trx,
        items.map((u) => ({
          section: 'user' as const,
          key: u.parsed.key,
          sourceDigest: u.parsed.digest,
          writtenDigest:
            u.credential === 'write' ? digestOfStored(u.stored!) : u.credential === 'delete' ? null : u.writtenDigest,
        })),
        now,
      )
    },
  }
}

function rowsStep<T extends { userId: string }>(
  section: SectionName,
  rows: RowPlan<T>[],
  write: (trx: Trx, items: RowPlan<T>[]) => Promise<void>,
  { ordered = false }: { ordered?: boolean } = {},
): Step<RowPlan<T>> {
  return {
    section,
    ordered,
    items: rows.filter((r) => r.action === 'create' || r.action === 'update'),
    issueOf: (r) => ({ section, index: r.parsed.index, id: r.parsed.id, userId: r.parsed.row.userId }),
    fail: (r) => {
      r.action = 'failed'
    },
    write,
  }
}

// biome-ignore lint/suspicious/noExplicitAny: each step has its own row type; writePlan runs them all alike
function steps(plan: ImportPlan, now: Date): Array<Step<any>> {
  const records = (section: ImportSection) => (trx: Trx, items: RowPlan<unknown>[]) =>
    upsertImportRecords(
      trx,
      items.map((r) => ({ section, key: r.parsed.key, sourceDigest: r.parsed.digest })),
      now,
    )
  return [
    usersStep(plan, now),
    rowsStep('accounts', plan.accounts, async (trx, items) => {
      await upsertProviderAccounts(
        trx,
        items.map(({ parsed: { row } }) => ({ id: newId(), ...row })),
        now,
      )
      await records('account')(trx, items)
    }),
    rowsStep('journalEntries', plan.journalEntries, async (trx, items) => {
      await upsertJournalEntries(
        trx,
        items.map(({ parsed: { row }, action }) => {
          const stamps = timestamps(row, action, now)
          return {
            id: row.id,
            user_id: row.userId,
            content: row.content,
            mood: row.mood,
            mood_label: row.moodLabel,
            tags: row.tags,
            // Without a calendar date, the entry belongs to the UTC day it was written.
            entry_date: row.entryDate ?? todayUtc(stamps.created_at),
            prompt_id: row.promptId,
            ...stamps,
          }
        }),
      )
      await records('journal_entry')(trx, items)
    }),
    rowsStep('compatibilityResults', plan.compatibilityResults, async (trx, items) => {
      await upsertCompatibilityResults(
        trx,
        items.map(({ parsed: { row }, action }) => ({
          id: row.id,
          user_id: row.userId,
          partner: row.partner,
          systems: row.systems,
          score: row.score,
          summary: row.summary,
          deep_insights: row.deepInsights,
          deep_insights_unlocked: row.deepInsightsUnlocked,
          payment_id: row.paymentId,
          ...timestamps(row, action, now),
        })),
      )
      await records('compatibility_result')(trx, items)
    }),
    rowsStep(
      'consents',
      plan.consents,
      async (trx, items) => {
        await upsertConsents(
          trx,
          items.map(({ parsed: { row } }) => ({
            id: row.id,
            user_id: row.userId,
            type: row.type,
            version: row.version,
            granted: row.granted,
            created_at: dateOr(row.createdAt, now),
          })),
        )
        await records('consent')(trx, items)
      },
      { ordered: true },
    ),
  ]
}

/** A refusal that concerns the row (constraint, bad value), as opposed to the database being unusable. */
function rowError(err: unknown): string | null {
  const e = err as { code?: string; constraint?: string; message?: string }
  if (typeof e.code !== 'string' || !/^2[23]/.test(e.code)) return null
  if (e.code === '23503') return 'refused by the database: the user it belongs to does not exist'
  if (e.code === '23505') return `refused by the database: conflicts with an existing row (${e.constraint ?? 'unique'})`
  return `refused by the database: ${e.message ?? e.code}`
}

interface WriteOptions {
  strict: boolean
  batchSize: number
  /** Batch transactions in flight at once (not with `strict`: that is one transaction). */
  parallel: number
  now: Date
  progress: Progress
  /** Records the run; `refused` are the rows refused at write time. */
  audit: (trx: Trx, refused: RowIssue[]) => Promise<void>
}

/**
 * Writes every create/update of the plan. Rows refused at write time are marked failed and
 * returned. With `strict`, one transaction: any refusal rolls everything back and is thrown.
 */
export async function writePlan(db: DB, plan: ImportPlan, options: WriteOptions): Promise<RowIssue[]> {
  const { batchSize, progress } = options
  const all = steps(plan, options.now)
  if (options.strict) {
    await db.transaction().execute(async (trx) => {
      for (const step of all) {
        progress.start(`writing ${step.section}`, step.items.length)
        for (const batch of chunks(step.items, batchSize)) {
          await step.write(trx, batch)
          progress.advance(batch.length)
        }
        progress.finish()
      }
      await options.audit(trx, [])
    })
    return []
  }
  const refused: RowIssue[] = []
  for (const step of all) {
    progress.start(`writing ${step.section}`, step.items.length)
    // Batches of one section are independent (duplicates were rejected), so a few run at once,
    // unless their order counts; a section starts only when the one before it is written (entries
    // need their users).
    await mapLimit(chunks(step.items, batchSize), step.ordered ? 1 : options.parallel, async (batch) => {
      try {
        await db.transaction().execute((trx) => step.write(trx, batch))
      } catch (err) {
        if (rowError(err) === null) throw err
        for (const item of batch) {
          try {
            await db.transaction().execute((trx) => step.write(trx, [item]))
          } catch (rowErr) {
            const reason = rowError(rowErr)
            if (reason === null) throw rowErr
            step.fail(item)
            refused.push({ ...step.issueOf(item), reason })
          }
        }
      }
      progress.advance(batch.length)
    })
    progress.finish()
  }
  await db.transaction().execute((trx) => options.audit(trx, refused))
  return refused
}
