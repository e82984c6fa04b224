// The identity provider (OpenID Connect, authorization code + PKCE). The only module that imports
// arctic and jose: swapping either is a one-file change.
import { timingSafeEqual } from 'node:crypto'
import {
  ArcticFetchError,
  CodeChallengeMethod,
  generateCodeVerifier,
  generateState,
  OAuth2Client,
  OAuth2RequestError,
} from 'arctic'
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose'
import { Email } from '../core/schemas.js'

const IDP_SCOPES = ['openid', 'email', 'profile']
const DISCOVERY_TTL_MS = 60 * 60 * 1000
const CLOCK_TOLERANCE_S = 60

export interface IdpSettings {
  issuer: string
  clientId: string
  clientSecret?: string
  redirectUri: string
  /** Each call to the provider (discovery, token, keys) gives up after this long. */
  timeoutMs?: number
}

interface Discovery {
  issuer: string
  authorization_endpoint: string
  token_endpoint: string
  jwks_uri: string
}

/** What we keep of a verified ID token. */
export interface IdpIdentity {
  sub: string
  email: string | null
  emailVerified: boolean
  name: string | null
  picture: string | null
}

export type IdpErrorCode = 'invalid_code' | 'invalid_token' | 'invalid_email' | 'provider_unavailable'

/** A failed exchange, with the code the callback puts in `?error=`. */
export class IdpError extends Error {
  constructor(
    readonly code: IdpErrorCode,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, options)
    this.name = 'IdpError'
  }
}

export interface AuthorizationRequest {
  url: string
  state: string
  codeVerifier: string
  nonce: string
}

export const safeEqual = (a: string, b: string): boolean => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

const isHttpUrl = (v: unknown): v is string => {
  if (typeof v !== 'string') return false
  try {
    const { protocol } = new URL(v)
    return protocol === 'https:' || protocol === 'http:'
  } catch {
    return false
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new IdpError('provider_unavailable', `${what} timed out`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/**
 * The token's address by the sign-up rule (schemas.ts), or null when it carries none. One the rule
 * refuses is refused whole, never repaired: lower-cased with Unicode's rules "\u212Aate@" is
 * "kate@", someone else's address, and a longer one cut short could be someone else's too.
 */
function addressOf(claim: unknown): string | null {
  if (typeof claim !== 'string' || claim.trim() === '') return null
  const parsed = Email.safeParse(claim)
  if (!parsed.success) throw new IdpError('invalid_email', 'ID token email is not a usable address')
  return parsed.data
}

export class IdentityProvider {
  private readonly client: OAuth2Client
  private readonly timeoutMs: number
  private discovery?: { doc: Discovery; fetchedAt: number }
  private jwks?: { uri: string; set: ReturnType<typeof createRemoteJWKSet> }

  constructor(private readonly settings: IdpSettings) {
    this.client = new OAuth2Client(settings.clientId, settings.clientSecret ?? null, settings.redirectUri)
    this.timeoutMs = settings.timeoutMs ?? 5000
  }

  /** The discovery document, cached for an hour; a failed fetch is not cached. */
  private async discover(): Promise<Discovery> {
    if (this.discovery && Date.now() - this.discovery.fetchedAt < DISCOVERY_TTL_MS) return this.discovery.doc
    const url = `${this.settings.issuer}/.well-known/openid-configuration`
    let doc: Partial<Discovery>
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(this.timeoutMs), headers: { accept: 'application/json' } })
      if (!res.ok) throw new Error(`discovery answered ${res.status}`)
      doc = (await res.json()) as Partial<Discovery>
    } catch (err) {
      throw new IdpError('provider_unavailable', 'The identity provider could not be reached', { cause: err })
    }
    // OpenID Connect Discovery §4.3: the document must name the issuer we asked, or it is not ours.
    if (
      doc.issuer !== this.settings.issuer ||
      !isHttpUrl(doc.authorization_endpoint) ||
      !isHttpUrl(doc.token_endpoint) ||
      !isHttpUrl(doc.jwks_uri)
    ) {
      throw new IdpError('provider_unavailable', 'The identity provider published an unusable discovery document')
    }
    const checked = doc as Discovery
    this.discovery = { doc: checked, fetchedAt: Date.now() }
    if (this.jwks?.uri !== checked.jwks_uri) {
      // jose caches the keys and refetches (rate-limited) when a token names an unknown key id.
      this.jwks = {
        uri: checked.jwks_uri,
        set: createRemoteJWKSet(new URL(checked.jwks_uri), { timeoutDuration: this.timeoutMs }),
      }
    }
    return checked
  }

  async authorizationRequest(): Promise<AuthorizationRequest> {
    const { authorization_endpoint } = await this.discover()
    const state = generateState()
    const codeVerifier = generateCodeVerifier()
    const nonce = generateState()
    const url = this.client.createAuthorizationURLWithPKCE(
      authorization_endpoint,
      state,
      CodeChallengeMethod.S256,
      codeVerifier,
      IDP_SCOPES,
    )
    url.searchParams.set('nonce', nonce)
    return { url: url.toString(), state, codeVerifier, nonce }
  }

  /** Redeems the code and verifies the ID token (signature, iss, aud, azp, exp, iat, nonce). */
  async exchange(code: string, codeVerifier: string, nonce: string, now: Date): Promise<IdpIdentity> {
    const { token_endpoint } = await this.discover()
    let idToken: string
    try {
      const tokens = await withTimeout(
        this.client.validateAuthorizationCode(token_endpoint, code, codeVerifier),
        this.timeoutMs,
        'token request',
      )
      idToken = tokens.idToken()
    } catch (err) {
      if (err instanceof IdpError) throw err
      // invalid_grant and friends: a used, expired or foreign code, or a PKCE mismatch.
      if (err instanceof OAuth2RequestError) throw new IdpError('invalid_code', `token endpoint refused the code: ${err.code}`)
      if (err instanceof ArcticFetchError)
        throw new IdpError('provider_unavailable', 'token endpoint unreachable', { cause: err })
      // A 200 without id_token, or an unreadable answer.
      throw new IdpError('invalid_token', 'token response carried no usable ID token', { cause: err })
    }
    return this.verifyIdToken(idToken, nonce, now)
  }

  private async verifyIdToken(idToken: string, nonce: string, now: Date): Promise<IdpIdentity> {
    const { issuer, clientId } = this.settings
    let payload: JWTPayload
    try {
      ;({ payload } = await jwtVerify(idToken, this.jwks!.set, {
        issuer,
        audience: clientId,
        currentDate: now,
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ['sub', 'exp', 'iat'],
      }))
    } catch (err) {
      throw new IdpError('invalid_token', `ID token rejected: ${(err as Error).message}`, { cause: err })
    }
    // OIDC Core §3.1.3.7: with several audiences, azp must name us.
    if (Array.isArray(payload.aud) && payload.aud.length > 1 && payload.azp !== clientId) {
      throw new IdpError('invalid_token', 'ID token azp is not this client')
    }
    // OIDC Core §2: sub is a string of at most 255 ASCII characters; jose checks only its presence.
    if (typeof payload.sub !== 'string' || payload.sub === '' || payload.sub.length > 255) {
      throw new IdpError('invalid_token', 'ID token sub is not a usable string')
    }
    // The nonce binds the token to this browser's flow: a token injected from another flow fails here.
    if (typeof payload.nonce !== 'string' || !safeEqual(payload.nonce, nonce)) {
      throw new IdpError('invalid_token', 'ID token nonce does not match')
    }
    // Cut by code points, so a pair of surrogates is never split into one that cannot be stored.
    const str = (v: unknown, max: number) =>
      typeof v === 'string' && v.trim() !== '' ? Array.from(v.trim()).slice(0, max).join('') : null
    return {
      sub: payload.sub,
      email: addressOf(payload.email),
      // Some providers send the string "true".
      emailVerified: payload.email_verified === true || payload.email_verified === 'true',
      name: str(payload.name, 100),
      picture: isHttpUrl(payload.picture) && payload.picture.length <= 2048 ? payload.picture : null,
    }
  }
}
