// Auth as one unit, registered by src/app.ts as it registers a domain: this plugin builds what the
// ways in share (sessions and their cache, the cookies, the password hasher, two-factor's keys, the
// security notices over the mailer, the tokens' issuer and signing keys) and registers every /api/auth route. The request pipeline
// reaches a request's session through `app.loadSession` (route-policy.ts asks it on each request).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { MaybePromise } from '../shared/maybe-async.js'
import { reportBootstrapOwner } from './account/bootstrap.js'
import { HashAdmission } from './password/admission.js'
import { HashPool } from './password/hash-pool.js'
import { PasswordHasher } from './password/password.js'
import accountRoutes from './routes/account.js'
import emailRoutes from './routes/email.js'
import idpRoutes from './routes/idp.js'
import mailboxRoutes from './routes/mailbox.js'
import passkeyRoutes from './routes/passkey.js'
import phoneRoutes from './routes/phone.js'
import securityRoutes from './routes/security.js'
import type { RouteFamily } from './routes/serve.js'
import sessionRoutes from './routes/session.js'
import guestRoutes from './routes/guests.js'
import tokenRoutes from './routes/tokens.js'
import twoFactorRoutes from './routes/two-factor.js'
import { DeviceCookie } from './security/devices.js'
import securityNotices from './security/plugin.js'
import { SessionCache } from './session/cache.js'
import { SessionCookie } from './session/cookies.js'
import { sessionLoader } from './session/request.js'
import { SessionManager } from './session/sessions.js'
import { GuestCookie } from './sign-in/guest-cookie.js'
import { SignInCookies } from './sign-in/step.js'
import { TwoFactorCookies } from './sign-in/two-factor-cookies.js'
import { TokenIssuer } from './tokens/issuer.js'
import { KeySeal, SigningKeys } from './tokens/keys.js'
import { TwoFactorKeys } from './two-factor/crypto.js'
import type { TwoFactorDeps } from './two-factor/service.js'

/** Every /api/auth route, by family, in the order they are registered (and listed in the OpenAPI document). */
export const AUTH_ROUTES: readonly RouteFamily[] = [
  tokenRoutes,
  sessionRoutes,
  guestRoutes,
  emailRoutes,
  idpRoutes,
  accountRoutes,
  twoFactorRoutes,
  passkeyRoutes,
  mailboxRoutes,
  phoneRoutes,
  securityRoutes,
]

declare module 'fastify' {
  interface FastifyInstance {
    hasher: PasswordHasher
    sessions: SessionManager
    sessionCache: SessionCache
    sessionCookie: SessionCookie
    /** The cookies of a sign-in's outcome (auth/sign-in/step.ts). */
    signInCookies: SignInCookies
    /** Two-factor's dependencies and cookies, shared by its routes and the sign-in routes. */
    twoFactor: { deps: TwoFactorDeps; cookies: TwoFactorCookies }
    /** Issues the tokens for other services (auth/tokens/issuer.ts). */
    tokens: TokenIssuer
    /** Their signing keys: the maintenance task rotates them (auth/tokens/keys.ts). */
    signingKeys: SigningKeys
    /** Sets request.user and request.session from the session cookie (auth/session/request.ts). */
    loadSession(request: FastifyRequest, reply: FastifyReply): MaybePromise<void>
  }
}

export default fp(
  async function auth(app: FastifyInstance) {
    const { config } = app
    const sessionCache = new SessionCache(config.auth.sessionCacheSize)
    sessionCache.listen(app.database.listen, {
      listening: () => app.log.info('session cache listener: listening, the cache is in use'),
      lost: (err) =>
        app.log.warn({ err: { message: err.message } }, 'session cache listener: connection lost, the cache is bypassed'),
    })
    const sessions = new SessionManager(app.db, app.clock, config.auth.sessionTtlDays, sessionCache)
    const sessionCookie = new SessionCookie(config.auth, app.clock)
    const hashPool = new HashPool(config.hashing.maxConcurrency, config.hashing.maxQueue)
    app.decorate('sessions', sessions)
    app.decorate('sessionCache', sessionCache)
    app.decorate('sessionCookie', sessionCookie)
    app.decorate('loadSession', sessionLoader(sessions, sessionCookie))
    const twoFactorCookies = new TwoFactorCookies(config.auth)
    app.decorate(
      'signInCookies',
      new SignInCookies(
        sessionCookie,
        twoFactorCookies,
        new DeviceCookie(config.auth),
        new GuestCookie(config.auth),
        config.auth,
      ),
    )
    // Every Argon2 operation takes from the budgets of its account and client address (admission.ts).
    app.decorate('hasher', new PasswordHasher(hashPool, new HashAdmission(app.rateLimits.hashes)))
    app.decorate('twoFactor', {
      deps: { db: app.db, clock: app.clock, hasher: app.hasher, keys: new TwoFactorKeys(config.auth.secrets) },
      cookies: twoFactorCookies,
    })
    const { jwt } = config
    const signingKeys = new SigningKeys(app.db, app.clock, new KeySeal(config.auth.secrets), {
      rotationMs: jwt.keyRotationDays * 24 * 60 * 60 * 1000,
      tokenTtlMs: jwt.ttlSeconds * 1000,
    })
    app.decorate('signingKeys', signingKeys)
    app.decorate('tokens', new TokenIssuer(signingKeys, app.clock, jwt))
    // Closing: the handlers still running and the work after their replies may hash or read
    // sessions, so they finish first (settled() waits for them), then the workers and the listener.
    app.addHook('onClose', async () => {
      await app.settled()
      await hashPool.close()
      await sessionCache.close()
    })
    await app.register(securityNotices)

    for (const routes of AUTH_ROUTES) await app.register(routes)
    app.addHook('onReady', () => reportBootstrapOwner({ db: app.db, log: app.log }, config.auth.bootstrapOwnerEmail))
  },
  { name: 'auth', dependencies: ['mailer', 'rate-limit', 'route-policy'] },
)
