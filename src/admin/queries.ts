import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../../db/schema.js'
import { sessionUserColumns, toSessionUser } from '../auth/queries.js'
import type { SessionUser } from '../auth/session/sessions.js'
import type { Plan, Role } from '../auth/tables.js'
import { exactTime, newestFirst, type PageRequest } from '../shared/pagination.js'
import type { Executor } from '../../db/index.js'


const userColumns = sessionUserColumns

export interface UserFilters {
  email?: string
  q?: string
  role?: Role
  plan?: Plan
}

/** LIKE wildcards in the admin's text are literal characters, not patterns. */
const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

export async function findUsers(
  db: Executor,
  filters: UserFilters,
  page: PageRequest,
): Promise<Array<{ user: SessionUser; cursorAt: string }>> {
  let query = db.selectFrom('user').select([...userColumns, exactTime('created_at').as('cursor_at')])
  if (filters.email !== undefined) query = query.where('email', '=', filters.email)
  if (filters.q !== undefined) {
    const pattern = `%${escapeLike(filters.q)}%`
    query = query.where((eb) => eb.or([eb('email', 'ilike', pattern), eb('name', 'ilike', pattern)]))
  }
  if (filters.role !== undefined) query = query.where('role', '=', filters.role)
  if (filters.plan !== undefined) query = query.where('plan', '=', filters.plan)
  const rows = await newestFirst(query, page).execute()
  return rows.map((r) => ({ user: toSessionUser(r), cursorAt: r.cursor_at }))
}

/** Locks the row: concurrent admin acts on one user apply one after the other. */
export async function findUserForUpdate(trx: Transaction<Database>, id: string): Promise<SessionUser | undefined> {
  const row = await trx.selectFrom('user').select(userColumns).where('id', '=', id).forUpdate().executeTakeFirst()
  return row && toSessionUser(row)
}

/** Changes the plan of a user. Never the role: that is changeRole's (roles.ts). */
export async function updateUser(
  trx: Transaction<Database>,
  id: string,
  changes: { plan?: Plan; plan_expires_at?: Date | null },
  now: Date,
): Promise<SessionUser> {
  const row = await trx
    .updateTable('user')
    .set({ ...changes, updated_at: now })
    .where('id', '=', id)
    .returning(userColumns)
    .executeTakeFirstOrThrow()
  return toSessionUser(row)
}

export interface UserCounts {
  sessions: number
  entries: number
  results: number
  payments: number
}

/** What a user holds in each domain; one sub-select per table, so a new domain adds one line. */
export async function countsFor(db: Executor, userId: string, now: Date): Promise<UserCounts> {
  const row = await db
    .selectNoFrom((eb) => [
      eb.selectFrom('session').select(eb.fn.countAll<number>().as('n'))
        .where('user_id', '=', userId).where('expires_at', '>', now).as('sessions'),
      eb.selectFrom('journal_entry').select(eb.fn.countAll<number>().as('n')).where('user_id', '=', userId).as('entries'),
      eb.selectFrom('compatibility_result').select(eb.fn.countAll<number>().as('n')).where('user_id', '=', userId).as('results'),
      eb.selectFrom('payment').select(eb.fn.countAll<number>().as('n')).where('user_id', '=', userId).as('payments'),
    ])
    .executeTakeFirstOrThrow()
  return {
    sessions: Number(row.sessions),
    entries: Number(row.entries),
    results: Number(row.results),
    payments: Number(row.payments),
  }
}

export interface AuditFilters {
  actorId?: string
  targetId?: string
  action?: string
}

export async function findAuditEvents(
  db: Executor,
  filters: AuditFilters,
  page: PageRequest,
) {
  let query = db
    .selectFrom('audit_event')
    .select(['id', 'at', 'actor_id', 'action', 'target_type', 'target_id', 'ip', 'details', exactTime('at').as('cursor_at')])
  if (filters.actorId !== undefined) query = query.where('actor_id', '=', filters.actorId)
  if (filters.targetId !== undefined) query = query.where('target_id', '=', filters.targetId)
  if (filters.action !== undefined) query = query.where('action', '=', filters.action)
  return newestFirst(query, page, 'at').execute()
}
