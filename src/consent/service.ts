// GDPR consent: an append-only log per user; the current state is the latest record per type.
// Sign-up records its initial consents through recordConsents, so this domain depends on no other.
import type { DB, Executor } from '../../db/index.js'
import type { RequestContext } from '../shared/context.js'
import { unauthorized } from '../shared/errors.js'
import { type ConsentRecord, insertConsents, listConsents } from './queries.js'
import type { ConsentInput } from './schemas.js'
import type { ConsentType } from './tables.js'

export interface ConsentDeps {
  db: DB
}

export interface Consents {
  /** The latest decision per type; a type never answered is absent. */
  current: Partial<Record<ConsentType, { granted: boolean; version: string; at: Date }>>
  /** Every record, newest first. */
  history: ConsentRecord[]
}

/** Where a decision was made, kept with the record (until the account is deleted). */
type ConsentSource = Pick<RequestContext, 'ip' | 'userAgent'>

/** Appends consent records; pass the caller's transaction (sign-up records its consents in its own). */
export async function recordConsents(
  db: Executor,
  userId: string,
  items: readonly ConsentInput[],
  source: ConsentSource,
): Promise<ConsentRecord[]> {
  return insertConsents(db, userId, items, source)
}

// The routes' policy requires a session; a request without one never reaches these.
function signedIn(ctx: RequestContext): string {
  if (ctx.actorId === null) throw unauthorized()
  return ctx.actorId
}

/** One decision of the signed-in user. */
export async function giveConsent(deps: ConsentDeps, ctx: RequestContext, input: ConsentInput): Promise<ConsentRecord> {
  const [record] = await recordConsents(deps.db, signedIn(ctx), [input], ctx)
  return record!
}

export async function getConsents(deps: ConsentDeps, ctx: RequestContext): Promise<Consents> {
  const history = await listConsents(deps.db, signedIn(ctx))
  const current: Consents['current'] = {}
  for (const record of history) {
    // history is newest first: the first record seen of a type is its current state
    current[record.type] ??= { granted: record.granted, version: record.version, at: record.createdAt }
  }
  return { current, history }
}
