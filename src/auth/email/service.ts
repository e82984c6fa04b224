// Email and password accounts: the rules behind sign-up and sign-in.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { recordAudit } from '../../shared/audit.js'
import type { ConsentInput } from '../../consent/schemas.js'
import { recordConsents } from '../../consent/service.js'
import { AppError } from '../../shared/errors.js'
import { newId } from '../../shared/ids.js'
import { isWeakHash, needsRehash } from '../password/password.js'
import { CREDENTIAL, findCredentialByEmail, findUserById, setPasswordHash, type UserWithFlags } from '../queries.js'

export interface RequestMeta {
  ip: string | null
  userAgent: string | null
}

export const invalidCredentials = () =>
  new AppError(401, 'INVALID_EMAIL_OR_PASSWORD', 'Invalid email or password')

export async function signUpWithEmail(
  app: FastifyInstance,
  input: { name: string; email: string; password: string; image?: string | null; consents?: readonly ConsentInput[] },
  meta: RequestMeta,
): Promise<UserWithFlags> {
  // Hash before the transaction: Argon2 work never holds a database connection.
  const passwordHash = await app.hasher.hash(input.password)
  const id = newId()
  try {
    await app.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('user')
        .values({ id, name: input.name, email: input.email, image: input.image ?? null })
        .execute()
      await trx
        .insertInto('account')
        .values({ id: newId(), user_id: id, provider_id: CREDENTIAL, account_id: id, password_hash: passwordHash })
        .execute()
      await recordAudit(trx, { actorId: id, action: 'auth.sign_up', targetType: 'user', targetId: id, ip: meta.ip })
      if (input.consents?.length) await recordConsents(trx, id, input.consents, meta)
    })
  } catch (err) {
    if ((err as { code?: string }).code === '23505') {
      throw new AppError(422, 'USER_ALREADY_EXISTS', 'An account with this email already exists')
    }
    throw err
  }
  return (await findUserById(app.db, id))!
}

export type SignInOutcome =
  | { ok: true; user: UserWithFlags }
  | { ok: false; reason: 'invalid' }
  | { ok: false; reason: 'reset_required' | 'email_not_verified'; user: UserWithFlags }

/**
 * Verifies email and password. An unknown email, an account without a password and a wrong
 * password cost the same Argon2 work and give the same answer, so nothing reveals which emails exist.
 */
export async function verifyEmailPassword(
  app: FastifyInstance,
  email: string,
  password: string,
  meta: RequestMeta,
): Promise<SignInOutcome> {
  const found = await findCredentialByEmail(app.db, email)
  if (!found || !found.passwordHash) {
    await app.hasher.verifyDummy(password)
    await recordAudit(app.db, {
      actorId: found?.user.id ?? null,
      action: 'auth.sign_in_failed',
      targetType: 'user',
      targetId: found?.user.id ?? null,
      ip: meta.ip,
      details: { email },
    })
    return { ok: false, reason: 'invalid' }
  }
  const { user, passwordHash } = found
  if (!(await app.hasher.verify(passwordHash, password))) {
    await recordAudit(app.db, {
      actorId: user.id, action: 'auth.sign_in_failed', targetType: 'user', targetId: user.id, ip: meta.ip,
    })
    return { ok: false, reason: 'invalid' }
  }
  // Only a caller who knows the password learns that a reset is required.
  if (user.passwordResetRequired || isWeakHash(passwordHash)) return { ok: false, reason: 'reset_required', user }
  if (app.config.auth.requireEmailVerification && !user.emailVerified) {
    return { ok: false, reason: 'email_not_verified', user }
  }
  if (needsRehash(passwordHash)) {
    // The previous system's scrypt/bcrypt hash is replaced by Argon2id now that we hold the password.
    await setPasswordHash(app.db, user.id, await app.hasher.hash(password))
  }
  return { ok: true, user }
}

/** Creates a fresh session (a new token at every sign-in: no session fixation) and sets the cookie. */
export async function startSession(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  userId: string,
  rememberMe: boolean,
) {
  // A cookie that came with the request is replaced, and its session ended.
  const previous = app.sessionCookie.read(request)
  if (previous) await app.sessions.revokeByToken(previous)
  const { token, session } = await app.sessions.create(userId, {
    rememberMe,
    ipAddress: request.ip,
    userAgent: request.headers['user-agent'] ?? null,
  })
  app.sessionCookie.set(reply, token, { rememberMe, expiresAt: session.expiresAt })
  await recordAudit(app.db, { actorId: userId, action: 'auth.sign_in', targetType: 'session', targetId: session.id, ip: request.ip })
  return session
}

export const requestMeta = (request: FastifyRequest): RequestMeta => ({
  ip: request.ip,
  userAgent: request.headers['user-agent'] ?? null,
})
