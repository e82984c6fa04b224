// Sign-in through the identity provider: the flow state cookie and the account rules.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Transaction } from 'kysely'
import type { Database } from '../../../db/schema.js'
import { recordAudit } from '../../shared/audit.js'
import { newId } from '../../shared/ids.js'
import { maybeBootstrapOwner } from '../bootstrap.js'
import { IdentityProvider, type IdpIdentity } from './oauth.js'
import { endSessionsOfUser } from '../queries.js'

export const IDP = 'idp'
const FLOW_TTL_MS = 10 * 60 * 1000
const BASE_COOKIE = 'idp_flow'

/** What the browser carries between the sign-in start and the callback (signed, never encrypted: no secret in it but the verifier, useless without the code). */
export interface IdpFlow {
  state: string
  codeVerifier: string
  nonce: string
  callbackURL: string
  errorCallbackURL: string
  newUserCallbackURL: string
  /** ms since the epoch */
  expiresAt: number
}

export type IdpFailureCode =
  | 'access_denied'
  | 'state_mismatch'
  | 'invalid_code'
  | 'invalid_token'
  | 'email_not_verified'
  | 'email_missing'
  | 'issuer_mismatch'
  | 'provider_unavailable'
  | 'provider_error'

const providers = new WeakMap<FastifyInstance, IdentityProvider>()

/** The app's provider client (one per app: it caches discovery and keys), or null when unconfigured. */
export function identityProvider(app: FastifyInstance): IdentityProvider | null {
  const { issuer, clientId, clientSecret } = app.config.idp
  if (!clientId) return null
  let provider = providers.get(app)
  if (!provider) {
    provider = new IdentityProvider({
      issuer, clientId, clientSecret, redirectUri: `${app.config.auth.baseUrl}/api/auth/callback/idp`,
    })
    providers.set(app, provider)
  }
  return provider
}

const cookieName = (app: FastifyInstance) => (app.config.auth.secureCookies ? `__Secure-${BASE_COOKIE}` : BASE_COOKIE)

function cookieAttributes(app: FastifyInstance) {
  // Lax: the provider's redirect back is a top-level GET navigation, which Lax lets through.
  return { path: '/api/auth', httpOnly: true, sameSite: 'lax' as const, secure: app.config.auth.secureCookies }
}

export function setFlowCookie(app: FastifyInstance, reply: FastifyReply, flow: Omit<IdpFlow, 'expiresAt'>): void {
  const value: IdpFlow = { ...flow, expiresAt: app.clock.now().getTime() + FLOW_TTL_MS }
  reply.setCookie(cookieName(app), Buffer.from(JSON.stringify(value)).toString('base64url'), {
    ...cookieAttributes(app),
    signed: true,
    maxAge: FLOW_TTL_MS / 1000,
  })
}

/** Reads and always clears the flow cookie: one callback per flow. Null when absent or forged. */
export function takeFlowCookie(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply): IdpFlow | null {
  const raw = request.cookies[cookieName(app)]
  if (raw === undefined) return null
  reply.setCookie(cookieName(app), '', { ...cookieAttributes(app), maxAge: 0, expires: new Date(0) })
  const unsigned = request.unsignCookie(raw)
  if (!unsigned.valid || !unsigned.value) return null
  try {
    const flow = JSON.parse(Buffer.from(unsigned.value, 'base64url').toString('utf8')) as IdpFlow
    return typeof flow.state === 'string' && typeof flow.expiresAt === 'number' ? flow : null
  } catch {
    return null
  }
}

export type IdpSignInOutcome =
  | { ok: true; userId: string; isNewUser: boolean }
  | { ok: false; error: 'email_not_verified' | 'email_missing' }

/**
 * The account rules: the subject decides (the same `sub` is always the same user, whatever its
 * email is today); a new subject links to an existing user only on a provider-verified email,
 * else creates a member.
 */
export async function signInWithIdentity(
  app: FastifyInstance,
  identity: IdpIdentity,
  ip: string | null,
): Promise<IdpSignInOutcome> {
  try {
    return await resolveAccount(app, identity, ip)
  } catch (err) {
    // Two callbacks for the same new subject raced; the loser finds the winner's rows.
    if ((err as { code?: string }).code === '23505') return resolveAccount(app, identity, ip)
    throw err
  }
}

function resolveAccount(app: FastifyInstance, identity: IdpIdentity, ip: string | null): Promise<IdpSignInOutcome> {
  const bootstrapEmail = app.config.auth.bootstrapOwnerEmail
  return app.db.transaction().execute(async (trx): Promise<IdpSignInOutcome> => {
    const linked = await trx
      .selectFrom('account')
      .innerJoin('user', 'user.id', 'account.user_id')
      .select(['user.id', 'user.email'])
      .where('account.provider_id', '=', IDP)
      .where('account.account_id', '=', identity.sub)
      .executeTakeFirst()
    if (linked) {
      // The user's email stays ours: a changed address at the provider does not rewrite it.
      if (identity.emailVerified && identity.email === linked.email) {
        await maybeBootstrapOwner(trx, { id: linked.id, email: linked.email, emailVerified: true }, bootstrapEmail)
      }
      return { ok: true, userId: linked.id, isNewUser: false }
    }

    if (!identity.email) return { ok: false, error: 'email_missing' }
    const existing = await trx
      .selectFrom('user')
      .select(['id', 'email', 'email_verified'])
      .where('email', '=', identity.email)
      .executeTakeFirst()

    if (existing) {
      // Linking on an unverified email would hand the account to whoever typed that address at the provider.
      if (!identity.emailVerified) {
        await recordAudit(trx, {
          actorId: null, action: 'auth.idp.link_refused', targetType: 'user', targetId: existing.id, ip,
          details: { reason: 'email_not_verified' },
        })
        return { ok: false, error: 'email_not_verified' }
      }
      const linkId = newId()
      await trx
        .insertInto('account')
        .values({ id: linkId, user_id: existing.id, provider_id: IDP, account_id: identity.sub, password_hash: null })
        .execute()
      if (!existing.email_verified) {
        await claimUnverifiedAccount(trx, existing.id, linkId, app.clock.now(), ip)
      }
      await recordAudit(trx, { actorId: existing.id, action: 'auth.idp.account_linked', targetType: 'user', targetId: existing.id, ip })
      await maybeBootstrapOwner(trx, { id: existing.id, email: existing.email, emailVerified: true }, bootstrapEmail)
      return { ok: true, userId: existing.id, isNewUser: false }
    }

    const id = newId()
    await trx
      .insertInto('user')
      .values({
        id,
        name: identity.name ?? identity.email.split('@', 1)[0]!,
        email: identity.email,
        email_verified: identity.emailVerified,
        image: identity.picture,
      })
      .execute()
    await trx
      .insertInto('account')
      .values({ id: newId(), user_id: id, provider_id: IDP, account_id: identity.sub, password_hash: null })
      .execute()
    await recordAudit(trx, { actorId: id, action: 'auth.sign_up', targetType: 'user', targetId: id, ip, details: { via: IDP } })
    await maybeBootstrapOwner(trx, { id, email: identity.email, emailVerified: identity.emailVerified }, bootstrapEmail)
    return { ok: true, userId: id, isNewUser: true }
  })
}

/**
 * The provider vouches for an address nobody had proven yet. Whoever registered it first (perhaps
 * an attacker waiting for the real owner) loses every way in: the password, any other link, every
 * session, every pending emailed link. Only the provider identity just linked remains, and the address counts as verified.
 */
async function claimUnverifiedAccount(
  trx: Transaction<Database>,
  userId: string,
  keepAccountId: string,
  now: Date,
  ip: string | null,
): Promise<void> {
  const removed = await trx
    .deleteFrom('account')
    .where('user_id', '=', userId)
    .where('id', '<>', keepAccountId)
    .returning('provider_id')
    .execute()
  await trx.updateTable('user').set({ email_verified: true, updated_at: now }).where('id', '=', userId).execute()
  const sessionsRevoked = await endSessionsOfUser(trx, userId)
  // Pending links (reset, change of address) were asked for by the same unproven holder.
  const tokens = await trx.deleteFrom('verification').where('user_id', '=', userId).executeTakeFirst()
  await recordAudit(trx, {
    actorId: null, action: 'auth.idp.unverified_account_claimed', targetType: 'user', targetId: userId, ip,
    details: {
      removedAccounts: removed.map((r) => r.provider_id).sort(),
      sessionsRevoked,
      tokensRevoked: Number(tokens.numDeletedRows),
    },
  })
}
