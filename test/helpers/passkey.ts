// Passkey ceremonies through app.inject with a SoftAuthenticator, for the tests that need to hold
// a step in their hands (post an assertion twice, race one against a reset): the same requests
// better-auth's passkeyClient() sends, the challenge cookie carried by hand.
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { call, proveAddress } from './app.js'
import { credentialJson, type SoftAuthenticator } from './authenticator.js'

export const CHALLENGE_COOKIE = 'better-auth.better-auth-passkey'

const fromB64 = (s: string) => new Uint8Array(Buffer.from(s, 'base64url'))
type Descriptor = { id: string; type: string; transports?: string[] }
const descriptors = (list: Descriptor[] | undefined) => (list ?? []).map((d) => ({ ...d, id: fromB64(d.id) }))

/** `name=value` of the challenge cookie a response set. */
export function challengeCookieOf(res: LightMyRequestResponse): string {
  const all = ([] as string[]).concat(res.headers['set-cookie'] ?? [])
  const found = all.find((c) => c.startsWith(`${CHALLENGE_COOKIE}=`) && !c.startsWith(`${CHALLENGE_COOKIE}=;`))
  if (!found) throw new Error(`no challenge cookie: ${res.statusCode} ${res.body}`)
  return found.split(';', 1)[0]!
}

const withCookies = (...cookies: (string | undefined)[]) => cookies.filter(Boolean).join('; ') || undefined

/** Proves the address of the account of `sessionCookie` (a passkey needs it: src/auth/session/second-factor.ts). */
async function proveAddressOf(app: FastifyInstance, sessionCookie: string) {
  const session = await call(app, 'GET', '/api/auth/get-session', { cookie: sessionCookie })
  const id = (session.json() as { user?: { id: string } } | null)?.user?.id
  if (id) await proveAddress(app, id)
}

/** The registration options for `sessionCookie`, the authenticator's answer, and the challenge cookie: ready to post. */
export async function registrationOf(app: FastifyInstance, authenticator: SoftAuthenticator, sessionCookie: string) {
  await proveAddressOf(app, sessionCookie)
  const res = await call(app, 'GET', '/api/auth/passkey/generate-register-options', { cookie: sessionCookie })
  if (res.statusCode !== 200) throw new Error(`register options: ${res.statusCode} ${res.body}`)
  const o = res.json()
  const credential = await authenticator.create({
    publicKey: {
      ...o,
      challenge: fromB64(o.challenge),
      user: { ...o.user, id: fromB64(o.user.id) },
      excludeCredentials: descriptors(o.excludeCredentials),
    },
  })
  return { cookie: withCookies(sessionCookie, challengeCookieOf(res))!, response: credentialJson(credential), options: o }
}

/** Adds a passkey to the account of `sessionCookie`; its JSON. */
export async function registerPasskey(
  app: FastifyInstance,
  authenticator: SoftAuthenticator,
  sessionCookie: string,
  name?: string,
): Promise<{ id: string; credentialID: string; name: string | null }> {
  const { cookie, response } = await registrationOf(app, authenticator, sessionCookie)
  const res = await call(app, 'POST', '/api/auth/passkey/verify-registration', { cookie, body: { response, name } })
  if (res.statusCode !== 200) throw new Error(`verify-registration: ${res.statusCode} ${res.body}`)
  return res.json()
}

/** A sign-in's options (for `sessionCookie` when given), the authenticator's assertion, and the challenge cookie. */
export async function assertionOf(app: FastifyInstance, authenticator: SoftAuthenticator, sessionCookie?: string) {
  const res = await call(app, 'GET', '/api/auth/passkey/generate-authenticate-options', { cookie: sessionCookie })
  if (res.statusCode !== 200) throw new Error(`authenticate options: ${res.statusCode} ${res.body}`)
  const o = res.json()
  const credential = await authenticator.get({
    publicKey: { ...o, challenge: fromB64(o.challenge), allowCredentials: descriptors(o.allowCredentials) },
  })
  return { cookie: withCookies(sessionCookie, challengeCookieOf(res))!, response: credentialJson(credential), options: o }
}

/** Posts a sign-in's assertion with its challenge cookie. */
export const postAssertion = (app: FastifyInstance, a: { cookie: string; response: unknown }) =>
  call(app, 'POST', '/api/auth/passkey/verify-authentication', { cookie: a.cookie, body: { response: a.response } })

/** A whole passkey sign-in. */
export async function signInWithPasskey(app: FastifyInstance, authenticator: SoftAuthenticator) {
  return postAssertion(app, await assertionOf(app, authenticator))
}
