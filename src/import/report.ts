// The report of one run: counts per section, and every row that was not imported, with its reason.
import type { SectionName } from './schemas.js'

export interface RowIssue {
  section: SectionName | 'document'
  /** Position in the section's array (0-based); -1 for the document itself. */
  index: number
  /** The row's own id, when it has one. */
  id: string | null
  userId?: string
  reason: string
}

interface SectionCounts {
  total: number
  created: number
  updated: number
  unchanged: number
  skipped: number
  rejected: number
}

export interface ImportReport {
  file: string
  dryRun: boolean
  strict: boolean
  /** True when the valid rows were written (false for a dry run, a strict run with rejections, or a failure). */
  committed: boolean
  startedAt: string
  finishedAt: string
  durationMs: number
  /** Per section; when not committed (dry run, strict), what a committed run would have done. */
  counts: Record<SectionName, SectionCounts>
  /** Users by the kind of password they arrived with, and how many must reset it. */
  credentials: Record<
    'argon2' | 'scrypt' | 'bcrypt' | 'md5' | 'sha1' | 'sha256' | 'plain' | 'none' | 'resetRequired' | 'keptSinceChangedInApp',
    number
  >
  /** Users by stored role, and how many were mapped from `user` or from an unknown value. */
  roles: { member: number; admin: number; owner: number; mappedFromUser: number; unknownToMember: number }
  /** Rows not imported because they are invalid or conflict with the database. */
  rejected: RowIssue[]
  /** Rows deliberately left alone (e.g. deleted in the app since an earlier import). */
  skipped: RowIssue[]
  /** Imported, but with something worth knowing (unknown keys, an unknown role mapped to member). */
  warnings: RowIssue[]
  /** A failure that stopped the run (nothing of the failing transaction was written). */
  error?: string
}

export const emptyCounts = (): SectionCounts => ({ total: 0, created: 0, updated: 0, unchanged: 0, skipped: 0, rejected: 0 })

/** A few lines for a person at a terminal; the full report goes to the JSON file. */
export function summarise(report: ImportReport): string {
  const lines: string[] = []
  const mode = report.dryRun
    ? ' (dry run: nothing written)'
    : report.committed
      ? ''
      : report.strict && !report.error
        ? ' (--strict and rows rejected: nothing written)'
        : ' (not completed)'
  lines.push(`import of ${report.file}${mode} in ${(report.durationMs / 1000).toFixed(1)} s`)
  for (const [section, c] of Object.entries(report.counts)) {
    if (c.total === 0) continue
    lines.push(
      `  ${section}: ${c.total} rows, ${c.created} created, ${c.updated} updated, ${c.unchanged} unchanged, ` +
        `${c.skipped} skipped, ${c.rejected} rejected`,
    )
  }
  if (report.credentials.resetRequired > 0) lines.push(`  ${report.credentials.resetRequired} users must reset their password`)
  if (report.warnings.length > 0) lines.push(`  ${report.warnings.length} warnings`)
  for (const r of report.rejected.slice(0, 10)) {
    lines.push(`  rejected ${r.section}[${r.index}]${r.id ? ` ${r.id}` : ''}: ${r.reason}`)
  }
  if (report.rejected.length > 10) lines.push(`  ... and ${report.rejected.length - 10} more rejected rows (see the report)`)
  if (report.error) lines.push(`  error: ${report.error}`)
  return lines.join('\n')
}
