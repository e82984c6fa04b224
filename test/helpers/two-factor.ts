// Two-factor test kit: the app on a movable clock over a real socket, better-auth's own client with
// twoFactorClient() and a cookie jar, and TOTP codes made with otpauth at the app's time.
import { createAuthClient } from 'better-auth/client'
import { twoFactorClient } from 'better-auth/client/plugins'
import type { FastifyInstance } from 'fastify'
import { Secret, TOTP, URI } from 'otpauth'
import { buildTestApp, call, proveAddress } from './app.js'
import { cookieJarFetch } from './auth-client.js'

export const PASSWORD = 'correct horse battery staple'

/** The app on a clock the test moves (`clock.advance`), listening on a loopback port (any free one by default). */
export async function twoFactorApp(env: Record<string, string> = {}, port = 0) {
  let offsetMs = 0
  const clock = {
    now: () => new Date(Date.now() + offsetMs),
    advance: (ms: number) => {
      offsetMs += ms
    },
  }
  const app = await buildTestApp({ env, deps: { clock } })
  await app.listen({ port, host: '127.0.0.1' })
  const address = app.server.address() as { port: number }
  return { app, clock, baseURL: `http://127.0.0.1:${address.port}` }
}

/** A browser (see cookieJarFetch) that follows redirects, with better-auth's client and twoFactorClient(). */
export function browser(baseURL: string) {
  const { jar, setCookies, fetch: customFetchImpl } = cookieJarFetch('follow')
  const client = createAuthClient({ baseURL, plugins: [twoFactorClient()], fetchOptions: { customFetchImpl } })
  /** A POST as the web app sends it, for bodies the typed client would not let through. */
  const post = (path: string, body: unknown) =>
    customFetchImpl(`${baseURL}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })
  const get = (path: string) => customFetchImpl(`${baseURL}${path}`)
  return { client, jar, setCookies, post, get }
}

export type TestBrowser = ReturnType<typeof browser>

/** The base32 secret of an otpauth:// URI. */
export const secretOf = (totpURI: string): string => (URI.parse(totpURI) as TOTP).secret.base32

/** The code an authenticator app shows at the app's current time, `steps` time steps later. */
export function codeAt(secret: string, now: Date, steps = 0): string {
  return TOTP.generate({
    secret: Secret.fromBase32(secret),
    algorithm: 'SHA1',
    digits: 6,
    period: 30,
    timestamp: now.getTime() + steps * 30_000,
  })
}

/**
 * Turns two-factor on for a signed-up user over app.inject (its address proven first, as a code typed
 * in its session would): enable, then verify-totp with the code
 * at `now`. The answer to verify-totp is returned for the test to check (200 when it took).
 */
export async function enableTotp(app: FastifyInstance, user: { id: string; cookie: string; password: string }, now: Date) {
  await proveAddress(app, user.id)
  const enabled = await call(app, 'POST', '/api/auth/two-factor/enable', {
    cookie: user.cookie,
    body: { password: user.password },
  })
  const { totpURI, backupCodes } = enabled.json() as { totpURI: string; backupCodes: string[] }
  const secret = secretOf(totpURI)
  const confirmed = await call(app, 'POST', '/api/auth/two-factor/verify-totp', {
    cookie: user.cookie,
    body: { code: codeAt(secret, now) },
  })
  return { secret, backupCodes, confirmed }
}

export const SESSION = 'better-auth.session_token'
export const CHALLENGE = 'better-auth.two_factor'
export const TRUST = 'better-auth.trust_device'

/** The ids of the user's verification rows of one purpose (challenges, trusted devices). */
export async function verificationIds(app: FastifyInstance, userId: string, purpose: string) {
  return app.db.selectFrom('verification').select('id').where('user_id', '=', userId).where('purpose', '=', purpose).execute()
}

export async function sessionRows(app: FastifyInstance, userId: string) {
  return app.db.selectFrom('session').select(['id', 'two_factor_verified']).where('user_id', '=', userId).execute()
}
