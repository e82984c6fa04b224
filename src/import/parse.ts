// Reads an export into validated rows. Everything decided from the file alone happens here: row
// validation, role mapping, password formats, unknown keys and duplicates within the file.
import { createHash } from 'node:crypto'
import type { z } from 'zod'
import type { Role } from '../shared/roles.js'
import { parseCredential, type CredentialAlgorithm, type CredentialSource } from './credentials.js'
import { silentProgress, type Progress } from './progress.js'
import type { RowIssue } from './report.js'
import {
  reasonOf,
  rowSchemas,
  SECTIONS,
  type ImportAccountInput,
  type ImportCompatibilityResultInput,
  type ImportConsentInput,
  type ImportJournalEntryInput,
  type ImportUserInput,
  type SectionName,
  type SectionRows,
} from './schemas.js'

export class ImportFileError extends Error {}

export interface ParsedRow<T> {
  index: number
  /** The row's own id as the file gives it (reports show it); null for rows without one. */
  id: string | null
  /** The identity of the row across runs: its id, or a key derived from its content. */
  key: string
  row: T
  /** SHA-256 of the normalised row: equal digests mean an unchanged row. */
  digest: string
}

export interface ParsedUser extends ParsedRow<Omit<ImportUserInput, 'password' | 'role'> & { role: Role }> {
  credential: CredentialSource
  algorithm: CredentialAlgorithm
  roleMapping: 'kept' | 'fromUser' | 'unknown'
}

type ParsedSections = { [S in keyof SectionRows]: ParsedRow<SectionRows[S]>[] }

export interface ParsedDocument extends ParsedSections {
  users: ParsedUser[]
  totals: Record<SectionName, number>
  rejected: RowIssue[]
  warnings: RowIssue[]
}

const digestOf = (value: unknown): string => createHash('sha256').update(JSON.stringify(value)).digest('hex')

const rowId = (raw: unknown): string | null => {
  const id = (raw as { id?: unknown } | null)?.id
  return typeof id === 'string' ? id : null
}
const rowUserId = (raw: unknown): string | undefined => {
  const userId = (raw as { userId?: unknown } | null)?.userId
  return typeof userId === 'string' ? userId : undefined
}

function mapRole(role: string): { role: Role; mapping: ParsedUser['roleMapping'] } {
  if (role === 'user' || role === 'member') return { role: 'member', mapping: role === 'user' ? 'fromUser' : 'kept' }
  if (role === 'admin' || role === 'owner') return { role, mapping: 'kept' }
  return { role: 'member', mapping: 'unknown' }
}

export function parseDocument(document: unknown, progress: Progress = silentProgress): ParsedDocument {
  if (!document || typeof document !== 'object' || Array.isArray(document)) {
    throw new ImportFileError('the file is not a JSON object with sections (users, accounts, ...)')
  }
  const out: ParsedDocument = {
    users: [],
    accounts: [],
    journalEntries: [],
    compatibilityResults: [],
    consents: [],
    totals: { users: 0, accounts: 0, journalEntries: 0, compatibilityResults: 0, consents: 0 },
    rejected: [],
    warnings: [],
  }
  const unknownSections = Object.keys(document).filter((k) => !(SECTIONS as readonly string[]).includes(k))
  if (unknownSections.length > 0) {
    out.warnings.push({
      section: 'document',
      index: -1,
      id: null,
      reason: `unknown sections ignored: ${unknownSections.join(', ')}`,
    })
  }
  for (const section of SECTIONS) {
    const rows = (document as Record<string, unknown>)[section]
    if (rows === undefined || rows === null) continue
    if (!Array.isArray(rows)) throw new ImportFileError(`section "${section}" is not an array`)
    out.totals[section] = rows.length
    progress.start(`validating ${section}`, rows.length)
    for (const [index, raw] of rows.entries()) parseRow(out, section, raw, index)
    progress.finish()
  }
  rejectDuplicates(out, 'users', out.users, (u) => u.key, 'id')
  rejectDuplicates(out, 'users', out.users, (u) => u.row.email, 'email')
  rejectDuplicates(out, 'accounts', out.accounts, (a) => a.key, 'provider account')
  rejectDuplicates(out, 'journalEntries', out.journalEntries, (e) => e.key, 'id')
  rejectDuplicates(out, 'compatibilityResults', out.compatibilityResults, (r) => r.key, 'id')
  rejectDuplicates(out, 'consents', out.consents, (c) => c.key, 'consent')
  return out
}

function parseRow(out: ParsedDocument, section: SectionName, raw: unknown, index: number): void {
  const reject = (reason: string): void => {
    out.rejected.push({ section, index, id: rowId(raw), userId: rowUserId(raw), reason })
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    reject('not a JSON object')
    return
  }
  const schema: z.ZodObject = rowSchemas[section]
  const parsed = schema.safeParse(raw)
  if (!parsed.success) {
    reject(reasonOf(parsed.error))
    return
  }

  const unknown = Object.keys(raw).filter((k) => !(k in schema.shape))
  if (section === 'users') {
    const password = (raw as { password?: unknown }).password
    if (password && typeof password === 'object') {
      unknown.push(
        ...Object.keys(password)
          .filter((k) => k !== 'algorithm' && k !== 'hash')
          .map((k) => `password.${k}`),
      )
    }
  }
  if (unknown.length > 0) {
    out.warnings.push({
      section,
      index,
      id: rowId(raw),
      userId: rowUserId(raw),
      reason: `unknown keys ignored: ${unknown.join(', ')}`,
    })
  }

  switch (section) {
    case 'users': {
      const { password, role: previousRole, ...profile } = parsed.data as ImportUserInput
      const credential = parseCredential(password)
      if ('error' in credential) {
        reject(credential.error)
        return
      }
      const { role, mapping } = mapRole(previousRole)
      if (mapping === 'unknown') {
        out.warnings.push({ section, index, id: profile.id, reason: `unknown role "${previousRole}" imported as member` })
      }
      const row = { ...profile, role }
      out.users.push({
        index,
        id: row.id,
        key: row.id,
        row,
        digest: digestOf(row),
        credential: credential.source,
        algorithm: credential.algorithm,
        roleMapping: mapping,
      })
      return
    }
    case 'accounts': {
      const row = parsed.data as ImportAccountInput
      if (row.providerId !== 'idp') {
        reject(`unknown providerId "${row.providerId}": only "idp" links are imported (passwords come from users[].password)`)
        return
      }
      out.accounts.push({ index, id: null, key: `${row.providerId}:${row.accountId}`, row, digest: digestOf(row) })
      return
    }
    case 'journalEntries': {
      const row = parsed.data as ImportJournalEntryInput
      out.journalEntries.push({ index, id: row.id, key: row.id, row, digest: digestOf(row) })
      return
    }
    case 'compatibilityResults': {
      const row = parsed.data as ImportCompatibilityResultInput
      out.compatibilityResults.push({ index, id: row.id, key: row.id, row, digest: digestOf(row) })
      return
    }
    case 'consents': {
      const input = parsed.data as ImportConsentInput
      // Consents of the previous system have no id: one is derived from what identifies the
      // consent, so a second run finds the same row.
      const id = input.id ?? `imp_${digestOf([input.userId, input.type, input.version, input.createdAt]).slice(0, 24)}`
      const row = { ...input, id }
      out.consents.push({ index, id: input.id, key: id, row, digest: digestOf(input) })
    }
  }
}

/** Rows sharing a key are all rejected: which of them is right is the file owner's call. */
function rejectDuplicates<T extends ParsedRow<unknown>>(
  out: ParsedDocument,
  section: SectionName,
  rows: T[],
  keyOf: (row: T) => string,
  what: string,
): void {
  const byKey = new Map<string, T[]>()
  for (const row of rows) {
    const list = byKey.get(keyOf(row))
    if (list) list.push(row)
    else byKey.set(keyOf(row), [row])
  }
  const dropped = new Set<T>()
  for (const [key, list] of byKey) {
    if (list.length < 2) continue
    const at = list.map((r) => r.index).join(', ')
    for (const row of list) {
      dropped.add(row)
      const r = row.row as { userId?: string }
      out.rejected.push({
        section,
        index: row.index,
        id: row.id,
        userId: r.userId,
        reason: `duplicate ${what} "${key}" (rows ${at})`,
      })
    }
  }
  if (dropped.size > 0) {
    const kept = rows.filter((r) => !dropped.has(r))
    rows.length = 0
    rows.push(...kept)
  }
}
