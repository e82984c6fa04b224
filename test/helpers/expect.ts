// Assertions and database reads that many test files make the same way.
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import type { Test } from 'tap'
import type { Executor } from '../../db/index.js'
import { call, signUp, type TestUser } from './app.js'

/** Every case is refused with 400 VALIDATION_ERROR: the one answer to input the schema does not accept. */
export async function eachIsValidationError<Case>(
  t: Test,
  cases: readonly Case[],
  send: (input: Case) => Promise<LightMyRequestResponse>,
): Promise<void> {
  for (const input of cases) {
    const res = await send(input)
    const label = typeof input === 'string' ? input : JSON.stringify(input)
    t.equal(res.statusCode, 400, label)
    t.equal(res.json().code, 'VALIDATION_ERROR', label)
  }
}

/** Each request, sent from the web origin without a session, is refused with 401. */
export async function eachIsUnauthorized(
  t: Test,
  app: FastifyInstance,
  requests: ReadonlyArray<[InjectOptions['method'], string, unknown?]>,
): Promise<void> {
  for (const [method, url, body] of requests) {
    const res = await call(app, method, url, { body })
    t.equal(res.statusCode, 401, `${method} ${url}`)
  }
}

/**
 * Writes sent without a session to a member's real record: each is refused with 401, and the member
 * still has that one record, so nothing was written or deleted.
 */
export async function anonymousWritesChangeNothing(
  t: Test,
  app: FastifyInstance,
  record: { create: (member: TestUser) => Promise<{ id: string }>; rowsOf: (userId: string) => Promise<number> },
  writes: (id: string) => ReadonlyArray<[InjectOptions['method'], string, unknown?]>,
): Promise<void> {
  const member = await signUp(app)
  const { id } = await record.create(member)
  await eachIsUnauthorized(t, app, writes(id))
  t.equal(await record.rowsOf(member.id), 1, 'nothing was written or deleted')
}

/** How many rows of `table` have `value` in `column`. */
export async function countRows(db: Executor, table: string, column: string, value: string): Promise<number> {
  const count = sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)} where ${sql.ref(column)} = ${value}`
  return (await count.execute(db)).rows[0]!.n
}

/** The user's accounts with one provider (`'credential'` is the password), every column: a query to finish. */
export function accountsOf(db: Executor, userId: string, providerId: string) {
  return db.selectFrom('account').selectAll().where('user_id', '=', userId).where('provider_id', '=', providerId)
}

/** The user's rows of the verification table (links, codes, challenges, notices), every column: a query to finish. */
export function verificationsOf(db: Executor, userId: string) {
  return db.selectFrom('verification').selectAll().where('user_id', '=', userId)
}

/** The user's credential epoch: a session is created under it, and refused once it has moved on. */
export async function credentialEpoch(db: Executor, userId: string): Promise<number> {
  const row = await db.selectFrom('user').select('credential_epoch').where('id', '=', userId).executeTakeFirstOrThrow()
  return row.credential_epoch
}

/** The user's row, every column. */
export function userRow(db: Executor, id: string) {
  return db.selectFrom('user').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
}

/**
 * The audit events of one action (or of a LIKE pattern: a family, `'journal.%'`, or a kind,
 * `'%read_by_admin'`), about one target or by one actor. Oldest first.
 */
export function auditEvents(db: Executor, filter: { action: string; targetId?: string; actorId?: string }) {
  let query = db
    .selectFrom('audit_event')
    .selectAll()
    .where('action', filter.action.includes('%') ? 'like' : '=', filter.action)
  if (filter.targetId !== undefined) query = query.where('target_id', '=', filter.targetId)
  if (filter.actorId !== undefined) query = query.where('actor_id', '=', filter.actorId)
  return query.orderBy('at').execute()
}

/**
 * The moderator's one audit event of their domain: the read of someone else's record, naming the
 * record, its owner and the moderator's role, with the caller's address.
 */
export async function auditedModerationRead(
  t: Test,
  db: Executor,
  read: { moderatorId: string; role: string; action: string; targetType: string; targetId: string; ownerId: string },
): Promise<void> {
  const domain = read.action.split('.')[0]
  const events = await auditEvents(db, { action: `${domain}.%`, actorId: read.moderatorId })
  t.equal(events.length, 1, `${read.role}: one audit event`)
  t.match(events[0], {
    action: read.action,
    target_type: read.targetType,
    target_id: read.targetId,
    ip: String,
    details: { ownerId: read.ownerId, role: read.role },
  })
}

/**
 * Every row of `tables`, hashed, one hash a table: equal before and after a refused request proves
 * it wrote nothing to them.
 */
export async function tablesFingerprint(db: Executor, tables: readonly string[]): Promise<string> {
  const parts = await Promise.all(
    tables.map(async (table) => {
      const { rows } = await sql<{
        h: string
      }>`select md5(coalesce(string_agg(t::text, '|' order by t::text), '')) as h from ${sql.table(table)} t`.execute(db)
      return rows[0]!.h
    }),
  )
  return parts.join(',')
}
