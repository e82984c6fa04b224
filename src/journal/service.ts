// Journal rules: entries are counted against the plan in the transaction that stores them, and a
// member only ever reaches their own entries.
import { json, type DB } from '../../db/index.js'
import type { SessionUser } from '../user/types.js'
import type { Clock } from '../shared/clock.js'
import { signedIn, type RequestContext } from '../shared/context.js'
import { todayUtc } from '../shared/dates.js'
import { notFound } from '../shared/errors.js'
import { newId } from '../shared/ids.js'
import { authorizeRead, type Viewer } from '../shared/moderation.js'
import { byCreatedAt, toPage, type Page } from '../shared/pagination.js'
import { countedAct } from '../usage/service.js'
import { promptLocale, promptOfDay, type DailyPrompt } from './prompts.js'
import { deleteOwnEntry, findEntry, findUserLocale, insertEntry, listEntriesOf, updateOwnEntry } from './queries.js'
import type { CreateEntryInput, ListEntriesInput, TodayPromptInput, EntryChanges } from './schemas.js'
import type { JournalEntryRow } from './tables.js'

export interface JournalDeps {
  db: DB
  clock: Clock
}

export interface JournalEntry {
  id: string
  userId: string
  content: string
  mood: number
  moodLabel: string | null
  tags: string[]
  /** 'YYYY-MM-DD' */
  entryDate: string
  promptId: string | null
  createdAt: Date
  updatedAt: Date
}

const ENTRY = 'Journal entry'

const toEntry = (row: JournalEntryRow): JournalEntry => ({
  id: row.id,
  userId: row.user_id,
  content: row.content,
  mood: row.mood,
  moodLabel: row.mood_label,
  tags: row.tags,
  entryDate: row.entry_date,
  promptId: row.prompt_id,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
})

const uniqueTags = (tags: string[]): string[] => [...new Set(tags)]

/** An entry of the signed-in `user`, whose plan decides whether it is within the day's limit. */
export async function createEntry(
  deps: JournalDeps,
  _ctx: RequestContext,
  user: SessionUser,
  input: CreateEntryInput,
): Promise<JournalEntry> {
  const now = deps.clock.now()
  const row = await countedAct(deps.db, user, 'journalEntries', now, (trx) =>
    insertEntry(trx, {
      id: newId(),
      user_id: user.id,
      content: input.content,
      mood: input.mood,
      mood_label: input.moodLabel ?? null,
      tags: json(uniqueTags(input.tags ?? [])),
      entry_date: input.entryDate ?? todayUtc(now),
      prompt_id: input.promptId ?? null,
      created_at: now,
      updated_at: now,
    }),
  )
  return toEntry(row)
}

/** The owner's entry; any entry for an admin or owner `viewer`, audited. */
export async function readEntry(deps: JournalDeps, ctx: RequestContext, viewer: Viewer, id: string): Promise<JournalEntry> {
  const read = { targetType: 'journal_entry', action: 'journal.entry.read_by_admin', what: ENTRY }
  return toEntry(await authorizeRead(deps, viewer, await findEntry(deps.db, id), read, ctx.ip))
}

export async function updateEntry(
  deps: JournalDeps,
  ctx: RequestContext,
  id: string,
  input: EntryChanges,
): Promise<JournalEntry> {
  const row = await updateOwnEntry(deps.db, signedIn(ctx), id, {
    ...(input.content !== undefined && { content: input.content }),
    ...(input.mood !== undefined && { mood: input.mood }),
    ...(input.moodLabel !== undefined && { mood_label: input.moodLabel }),
    ...(input.tags !== undefined && { tags: json(uniqueTags(input.tags)) }),
    ...(input.entryDate !== undefined && { entry_date: input.entryDate }),
    ...(input.promptId !== undefined && { prompt_id: input.promptId }),
    updated_at: deps.clock.now(),
  })
  if (!row) throw notFound(ENTRY)
  return toEntry(row)
}

export async function deleteEntry(deps: JournalDeps, ctx: RequestContext, id: string): Promise<void> {
  if (!(await deleteOwnEntry(deps.db, signedIn(ctx), id))) throw notFound(ENTRY)
}

export async function listEntries(deps: JournalDeps, ctx: RequestContext, query: ListEntriesInput): Promise<Page<JournalEntry>> {
  const rows = await listEntriesOf(deps.db, signedIn(ctx), query)
  return toPage(rows, query.limit, toEntry, byCreatedAt)
}

/** The asked locale, else the user's profile locale, else English; the asked date, else today (UTC). */
export async function todayPrompt(deps: JournalDeps, ctx: RequestContext, query: TodayPromptInput): Promise<DailyPrompt> {
  const locale = query.locale ?? (await findUserLocale(deps.db, signedIn(ctx)))
  return promptOfDay(query.date ?? todayUtc(deps.clock.now()), promptLocale(locale))
}
