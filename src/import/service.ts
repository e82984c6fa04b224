// One import run: parse the export, compare it with the database, hash what must be hashed, write
// (unless dry run, or strict with rejections), and report every row that was not imported.
import type { DB } from '../../db/index.js'
import type { PasswordHasher } from '../auth/password/password.js'
import { recordAudit } from '../shared/audit.js'
import { systemClock } from '../shared/clock.js'
import { requiresReset, storedCredential } from './credentials.js'
import { parseDocument } from './parse.js'
import { mapLimit, planImport, type Action, type ImportPlan } from './plan.js'
import { silentProgress, type Progress } from './progress.js'
import { emptyCounts, type ImportReport, type RowIssue } from './report.js'
import { SECTIONS, type SectionName } from './schemas.js'
import { writePlan } from './write.js'

interface ImportOptions {
  /** Shown in the report and the audit event. */
  file: string
  dryRun?: boolean
  strict?: boolean
  batchSize?: number
  /** Batch transactions written at once; keep it below the database pool size (default 1). */
  parallel?: number
  now?: () => Date
  progress?: Progress
}

export const DEFAULT_BATCH_SIZE = 1000

export async function runImport(
  db: DB,
  hasher: PasswordHasher,
  document: unknown,
  options: ImportOptions,
): Promise<ImportReport> {
  const now = options.now ?? systemClock.now
  const progress = options.progress ?? silentProgress
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE
  const dryRun = options.dryRun ?? false
  const strict = options.strict ?? false
  const startedAt = now()

  const parsed = parseDocument(document, progress)
  const plan = await planImport(db, hasher, parsed, { batchSize, progress })

  const report = (committed: boolean, extra: { refused?: RowIssue[]; error?: string } = {}): ImportReport =>
    buildReport(plan, parsed.totals, {
      file: options.file,
      dryRun,
      strict,
      committed,
      startedAt,
      finishedAt: now(),
      refused: extra.refused ?? [],
      error: extra.error,
    })

  if (dryRun) return report(false)
  // --strict: a single rejected row means nothing is written at all.
  if (strict && plan.rejected.length > 0) return report(false)

  // Argon2 work happens before any transaction: it never holds a database connection.
  const toHash = plan.users.filter((u) => u.credential === 'write')
  progress.start('hashing passwords', toHash.length)
  await mapLimit(toHash, hasher.pool.capacity, async (u) => {
    u.stored = await storedCredential(hasher, u.parsed.credential)
    progress.advance(1)
  })
  progress.finish()

  try {
    const refused = await writePlan(db, plan, {
      strict,
      batchSize,
      parallel: options.parallel ?? 1,
      progress,
      now: startedAt,
      audit: (trx, refused) =>
        recordAudit(trx, {
          actorId: null,
          action: 'import.completed',
          targetType: 'import',
          targetId: null,
          details: { file: options.file, strict, counts: report(true, { refused }).counts },
        }),
    })
    return report(true, { refused })
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err)
    return report(false, {
      error: strict
        ? `the import failed and was rolled back, nothing was written: ${message}`
        : `the import stopped: ${message}; batches before the failing one were committed`,
    })
  }
}

const SECTION_OF_PLAN: Record<SectionName, keyof Pick<ImportPlan, SectionName>> = {
  users: 'users',
  accounts: 'accounts',
  journalEntries: 'journalEntries',
  compatibilityResults: 'compatibilityResults',
  consents: 'consents',
}

function buildReport(
  plan: ImportPlan,
  totals: Record<SectionName, number>,
  run: {
    file: string
    dryRun: boolean
    strict: boolean
    committed: boolean
    startedAt: Date
    finishedAt: Date
    refused: RowIssue[]
    error?: string
  },
): ImportReport {
  const rejected = sortIssues([...plan.rejected, ...run.refused])
  const skipped = sortIssues(plan.skipped)
  const counts = Object.fromEntries(
    SECTIONS.map((section) => {
      const c = emptyCounts()
      c.total = totals[section]
      for (const item of plan[SECTION_OF_PLAN[section]] as Array<{ action: Action }>) {
        if (item.action === 'create') c.created++
        else if (item.action === 'update') c.updated++
        else if (item.action === 'unchanged') c.unchanged++
      }
      c.rejected = rejected.filter((r) => r.section === section).length
      c.skipped = skipped.filter((r) => r.section === section).length
      return [section, c]
    }),
  ) as ImportReport['counts']

  const credentials: ImportReport['credentials'] = {
    argon2: 0,
    scrypt: 0,
    bcrypt: 0,
    md5: 0,
    sha1: 0,
    sha256: 0,
    plain: 0,
    none: 0,
    resetRequired: 0,
    keptSinceChangedInApp: plan.keptSinceChangedInApp,
  }
  const roles: ImportReport['roles'] = { member: 0, admin: 0, owner: 0, mappedFromUser: 0, unknownToMember: 0 }
  for (const u of plan.users) {
    if (u.action === 'failed') continue
    credentials[u.parsed.algorithm]++
    if (u.credential !== 'keep' && requiresReset(u.parsed.credential)) credentials.resetRequired++
    roles[u.parsed.row.role]++
    if (u.parsed.roleMapping === 'fromUser') roles.mappedFromUser++
    if (u.parsed.roleMapping === 'unknown') roles.unknownToMember++
  }
  return {
    file: run.file,
    dryRun: run.dryRun,
    strict: run.strict,
    committed: run.committed && !run.error,
    startedAt: run.startedAt.toISOString(),
    finishedAt: run.finishedAt.toISOString(),
    durationMs: run.finishedAt.getTime() - run.startedAt.getTime(),
    counts,
    credentials,
    roles,
    rejected,
    skipped,
    warnings: sortIssues(plan.warnings),
    ...(run.error ? { error: run.error } : {}),
  }
}

const ORDER = ['document', ...SECTIONS]
const sortIssues = (issues: RowIssue[]) =>
  [...issues].sort((a, b) => ORDER.indexOf(a.section) - ORDER.indexOf(b.section) || a.index - b.index)
