// Identity-provider test kit: a real OpenID Connect provider (oidc-provider) on loopback with its
// own keys, a hand-rolled issuer whose token endpoint answers whatever ID token a test forges, and
// a tiny fetch-driven "browser" that follows redirects by hand and keeps cookies per host.
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage } from 'node:http'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose'
import Provider from 'oidc-provider'
import { freePort } from './port.js'
import { listenUntilEnd } from './serve.js'

export const CLIENT_ID = 'insight-test-client'
export const CLIENT_SECRET = 'insight-test-client-secret-0123456789'

/** The app's settings for a provider at `issuer`, with this kit's client. */
export const idpEnv = (issuer: string) => ({ IDP_ISSUER: issuer, IDP_CLIENT_ID: CLIENT_ID, IDP_CLIENT_SECRET: CLIENT_SECRET })

export async function signingKey(): Promise<{ privateKey: CryptoKey; jwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  const kid = randomBytes(6).toString('hex')
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } }
}

export interface ProviderAccount {
  email: string
  email_verified: boolean
  name?: string
  picture?: string
}

/**
 * A certified OpenID Connect provider on 127.0.0.1 with devInteractions (its own login form: any
 * login name, any password). The login name is the account id and the `sub`. Consent is granted
 * automatically, as for a first-party client.
 */
export async function startOidcProvider(redirectUri: string) {
  const accounts = new Map<string, ProviderAccount>()
  const server = createServer()
  const port = await listenUntilEnd(server)
  const issuer = `http://127.0.0.1:${port}`
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  const privateJwk = { ...(await exportJWK(privateKey)), kid: 'provider-key', alg: 'RS256', use: 'sig' }

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [privateJwk] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'picture'] },
    // Like Google: the email claims travel in the ID token itself.
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 3600, IdToken: 600, Interaction: 600, Session: 3600 },
    features: { devInteractions: { enabled: true } },
    async findAccount(_ctx: unknown, id: string) {
      const account = accounts.get(id)
      if (!account) return undefined
      return { accountId: id, claims: async () => ({ sub: id, ...account }) }
    },
    // biome-ignore lint/suspicious/noExplicitAny: oidc-provider ships no types
    async loadExistingGrant(ctx: any) {
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId)
      if (grantId) return ctx.oidc.provider.Grant.find(grantId)
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId })
      grant.addOIDCScope('openid email profile')
      await grant.save()
      return grant
    },
  })
  server.on('request', provider.callback())
  return { issuer, accounts, provider }
}

/**
 * The provider on loopback for an API that is to listen on a free port: that port, the API's URL,
 * the provider, and the app's environment that points its sign-in at the provider.
 */
export async function providerForApi() {
  const apiPort = await freePort()
  const API = `http://127.0.0.1:${apiPort}`
  const idp = await startOidcProvider(`${API}/api/auth/callback/idp`)
  const env = { AUTH_URL: API, IDP_ISSUER: idp.issuer, IDP_CLIENT_ID: CLIENT_ID, IDP_CLIENT_SECRET: CLIENT_SECRET }
  return { apiPort, API, idp, env }
}
/**
 * An issuer whose discovery and keys are real but whose token endpoint answers the ID token the
 * test puts in `nextIdToken` (or an OAuth error for code "used"): for the token checks.
 */
export async function startForgingIssuer() {
  const key = await signingKey()
  const server = createServer()
  const state: { nextIdToken?: string; tokenRequests: URLSearchParams[] } = { tokenRequests: [] }
  server.on('request', async (req: IncomingMessage, res) => {
    const url = new URL(req.url ?? '/', issuer)
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    if (url.pathname === '/.well-known/openid-configuration') {
      return send(200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
      })
    }
    if (url.pathname === '/jwks') return send(200, { keys: [key.jwk] })
    if (url.pathname === '/token' && req.method === 'POST') {
      let raw = ''
      for await (const chunk of req) raw += chunk
      const form = new URLSearchParams(raw)
      state.tokenRequests.push(form)
      if (form.get('code') === 'used') return send(400, { error: 'invalid_grant', error_description: 'code already used' })
      if (form.get('code') === 'hangup') return req.socket.destroy()
      const body: Record<string, unknown> = { access_token: 'at', token_type: 'Bearer', expires_in: 60 }
      if (state.nextIdToken) body.id_token = state.nextIdToken
      return send(200, body)
    }
    send(404, { error: 'not_found' })
  })
  const port = await listenUntilEnd(server)
  const issuer = `http://127.0.0.1:${port}`
  /** Signs claims as this issuer would (override anything to forge), with its key or another. */
  const sign = async (claims: Record<string, unknown>, options: { key?: CryptoKey; kid?: string } = {}) => {
    const now = Math.floor(Date.now() / 1000)
    return new SignJWT({ iss: issuer, aud: CLIENT_ID, iat: now, exp: now + 300, ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: options.kid ?? key.jwk.kid! })
      .sign(options.key ?? key.privateKey)
  }
  return { issuer, state, sign }
}

interface StoredCookie {
  value: string
  path: string
}

/** Just enough of a browser: manual redirects, cookies per host with Path, form posts. */
export class Browser {
  private readonly jar = new Map<string, Map<string, StoredCookie>>()
  /** Every URL requested, in order. */
  readonly visited: string[] = []

  cookieHeader(url: string): string {
    const { host, pathname } = new URL(url)
    const cookies = this.jar.get(host) ?? new Map()
    return [...cookies]
      .filter(([, c]) => pathname.startsWith(c.path))
      .map(([n, c]) => `${n}=${c.value}`)
      .join('; ')
  }

  cookie(url: string, name: string): string | undefined {
    return this.jar.get(new URL(url).host)?.get(name)?.value
  }

  setCookie(url: string, name: string, value: string, path = '/'): void {
    const { host } = new URL(url)
    if (!this.jar.has(host)) this.jar.set(host, new Map())
    this.jar.get(host)!.set(name, { value, path })
  }

  async request(
    url: string,
    init: { method?: string; form?: Record<string, string>; json?: unknown; headers?: Record<string, string> } = {},
  ): Promise<Response> {
    this.visited.push(url)
    const headers: Record<string, string> = { ...init.headers }
    const cookie = this.cookieHeader(url)
    if (cookie) headers.cookie = cookie
    let body: string | undefined
    if (init.form) {
      body = new URLSearchParams(init.form).toString()
      headers['content-type'] = 'application/x-www-form-urlencoded'
    } else if (init.json !== undefined) {
      body = JSON.stringify(init.json)
      headers['content-type'] = 'application/json'
    }
    const res = await fetch(url, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body, redirect: 'manual' })
    const { host } = new URL(url)
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';').map((s) => s.trim())
      const eq = pair!.indexOf('=')
      const name = pair!.slice(0, eq)
      const value = pair!.slice(eq + 1)
      const path = attrs.find((a) => /^path=/i.test(a))?.slice(5) || '/'
      const gone = attrs.some((a) => /^max-age=0$/i.test(a) || /^expires=.*1970/i.test(a)) || value === ''
      if (!this.jar.has(host)) this.jar.set(host, new Map())
      if (gone) this.jar.get(host)!.delete(name)
      else this.jar.get(host)!.set(name, { value, path })
    }
    return res
  }
}

export interface DriveResult {
  /** Where the dance left the browser: the first URL outside the provider and the API. */
  landed: URL
  /** The API callback URL the provider redirected to (with code and state). */
  callbackUrl?: string
  /** The API's response to the callback. */
  callbackResponse?: Response
}

/**
 * Follows redirects from `start` through the provider's login form (as `login`, or pressing
 * "abort" when `abort` is set) until the browser leaves both the provider and the API.
 */
export async function drive(
  browser: Browser,
  start: string,
  options: { api: string; provider: string; login?: string; abort?: boolean },
): Promise<DriveResult> {
  let url = start
  let form: Record<string, string> | undefined
  const result: Partial<DriveResult> = {}
  for (let hop = 0; hop < 30; hop++) {
    const here = new URL(url)
    if (here.origin !== options.api && here.origin !== options.provider) return { ...result, landed: here }
    const res = await browser.request(url, form ? { form } : {})
    form = undefined
    if (here.origin === options.api && here.pathname === '/api/auth/callback/idp') {
      result.callbackUrl = url
      result.callbackResponse = res
    }
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location')!, url).toString()
      continue
    }
    const html = await res.text()
    if (res.status !== 200) throw new Error(`unexpected ${res.status} at ${url}: ${html.slice(0, 300)}`)
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1]
    if (!action) throw new Error(`no form at ${url}: ${html.slice(0, 300)}`)
    if (/name="prompt" value="login"/.test(html)) {
      if (options.abort) {
        url = new URL(`${new URL(action, url).pathname}/abort`, url).toString()
        continue
      }
      form = { prompt: 'login', login: options.login ?? 'nobody', password: 'any' }
    } else {
      form = { prompt: 'consent' }
    }
    url = new URL(action.replace(/&amp;/g, '&'), url).toString()
  }
  throw new Error('too many redirects')
}

/** Runs the provider part and returns the API callback URL without requesting it. */
export async function driveUntilCallback(
  browser: Browser,
  authorize: string,
  options: { api: string; login: string },
): Promise<string> {
  const { api, login } = options
  let url = authorize
  let form: Record<string, string> | undefined
  for (let hop = 0; hop < 20; hop++) {
    if (url.startsWith(`${api}/api/auth/callback/idp`)) return url
    const res = await browser.request(url, form ? { form } : {})
    form = undefined
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location')!, url).toString()
      continue
    }
    const html = await res.text()
    const action = /<form[^>]*action="([^"]+)"/.exec(html)![1]!
    form = /value="login"/.test(html) ? { prompt: 'login', login, password: 'any' } : { prompt: 'consent' }
    url = new URL(action, url).toString()
  }
  throw new Error('never reached the callback')
}
