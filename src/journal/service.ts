// Journal rules: entries are counted against the plan in the transaction that stores them, and a
// member only ever reaches their own entries.
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { json } from '../../db/index.js'
import type { SessionUser } from '../auth/session/sessions.js'
import { notFound } from '../shared/errors.js'
import { newId } from '../shared/ids.js'
import { consumeUsage } from '../usage/service.js'
import { byCreatedAt, toPage, type Page } from '../shared/pagination.js'
import { authorizeRead } from '../shared/moderation.js'
import { promptLocale, promptOfDay } from './prompts.js'
import { deleteOwnEntry, findEntry, insertEntry, listEntriesOf, updateOwnEntry } from './queries.js'
import { todayUtc, type CreateEntryInput, type EntryJson, type ListEntriesInput, type UpdateEntryInput } from './schemas.js'
import type { JournalEntryRow } from './tables.js'

const ENTRY = 'Journal entry'

export function toEntryJson(row: JournalEntryRow): EntryJson {
  return {
    id: row.id,
    userId: row.user_id,
    content: row.content,
    mood: row.mood,
    moodLabel: row.mood_label,
    tags: row.tags,
    entryDate: row.entry_date,
    promptId: row.prompt_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }
}

const uniqueTags = (tags: string[]): string[] => [...new Set(tags)]

export async function createEntry(app: FastifyInstance, user: SessionUser, input: CreateEntryInput): Promise<EntryJson> {
  const now = app.clock.now()
  const row = await app.db.transaction().execute(async (trx) => {
    // Counted first and rolled back with the insert: a refused or failed entry costs nothing.
    await consumeUsage(trx, user, 'journalEntries', 1, now)
    return insertEntry(trx, {
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
    })
  })
  return toEntryJson(row)
}

export async function readEntry(app: FastifyInstance, viewer: SessionUser, id: string, ip: string): Promise<EntryJson> {
  const row = await findEntry(app.db, id)
  if (!row) throw notFound(ENTRY)
  await authorizeRead(app, viewer, {
    ownerId: row.user_id,
    targetType: 'journal_entry',
    targetId: row.id,
    action: 'journal.entry.read_by_admin',
    what: ENTRY,
  }, ip)
  return toEntryJson(row)
}

export async function updateEntry(app: FastifyInstance, user: SessionUser, id: string, input: UpdateEntryInput): Promise<EntryJson> {
  const row = await updateOwnEntry(app.db, user.id, id, {
    ...(input.content !== undefined && { content: input.content }),
    ...(input.mood !== undefined && { mood: input.mood }),
    ...(input.moodLabel !== undefined && { mood_label: input.moodLabel }),
    ...(input.tags !== undefined && { tags: json(uniqueTags(input.tags)) }),
    ...(input.entryDate !== undefined && { entry_date: input.entryDate }),
    ...(input.promptId !== undefined && { prompt_id: input.promptId }),
    updated_at: app.clock.now(),
  })
  if (!row) throw notFound(ENTRY)
  return toEntryJson(row)
}

export async function deleteEntry(app: FastifyInstance, user: SessionUser, id: string): Promise<void> {
  if (!(await deleteOwnEntry(app.db, user.id, id))) throw notFound(ENTRY)
}

export async function listEntries(app: FastifyInstance, user: SessionUser, query: ListEntriesInput): Promise<Page<EntryJson>> {
  const rows = await listEntriesOf(app.db, user.id, query)
  return toPage(rows, query.limit, toEntryJson, byCreatedAt)
}

export async function todayPrompt(
  app: FastifyInstance,
  user: SessionUser,
  query: { locale?: string; date?: string },
) {
  const locale = query.locale ?? (await profileLocale(app, user.id))
  return promptOfDay(query.date ?? todayUtc(app.clock.now()), promptLocale(locale))
}

// The locale column belongs to the profile domain (migration 0002_profile).
async function profileLocale(app: FastifyInstance, userId: string): Promise<string | null> {
  const row = await app.db
    .selectFrom('user')
    .select(sql<string | null>`locale`.as('locale'))
    .where('id', '=', userId)
    .executeTakeFirst()
  return row?.locale ?? null
}
