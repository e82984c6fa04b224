// The identity provider flow's state, carried by the browser from the sign-in start to the callback
// in a signed cookie (signed, never encrypted: no secret in it but the PKCE verifier, useless
// without the code). Over HTTPS it is `__Host-idp_flow` (hostCookieName): a sibling subdomain cannot
// plant its own flow in a browser and so sign that browser in to its account at the callback (a
// login CSRF).
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import type { Clock } from '../../shared/clock.js'
import { cookiesOf, hostCookieAttributes, hostCookieName } from '../session/cookie-attributes.js'

const FLOW_TTL_MS = 10 * 60 * 1000
const BASE_NAME = 'idp_flow'

export interface IdpFlow {
  state: string
  codeVerifier: string
  nonce: string
  callbackURL: string
  errorCallbackURL: string
  newUserCallbackURL: string
  /** Set by link-social: the callback links the provider account to this signed-in user instead of signing in. */
  linkUserId?: string
  /** The guest whose browser started the flow (sign-in/step.ts, BrowserState): the one guest its sign-in may adopt. */
  guest?: string
  /** ms since the epoch */
  expiresAt: number
}

export class FlowCookie {
  private readonly name: string

  constructor(
    private readonly config: Config['auth'],
    private readonly clock: Clock,
  ) {
    this.name = hostCookieName(config, BASE_NAME)
  }

  private attributes() {
    // Lax (as every auth cookie): the provider's redirect back is a top-level GET navigation.
    return hostCookieAttributes(this.config)
  }

  set(reply: FastifyReply, flow: Omit<IdpFlow, 'expiresAt'>): void {
    const value: IdpFlow = { ...flow, expiresAt: this.clock.now().getTime() + FLOW_TTL_MS }
    reply.setCookie(this.name, Buffer.from(JSON.stringify(value)).toString('base64url'), {
      ...this.attributes(),
      signed: true,
      maxAge: FLOW_TTL_MS / 1000,
    })
  }

  /** Reads and always clears the flow cookie: one callback per flow. Null when absent or forged. */
  take(request: FastifyRequest, reply: FastifyReply): IdpFlow | null {
    const raw = cookiesOf(request)[this.name]
    if (raw === undefined) return null
    reply.setCookie(this.name, '', { ...this.attributes(), maxAge: 0, expires: new Date(0) })
    const unsigned = request.unsignCookie(raw)
    if (!unsigned.valid || !unsigned.value) return null
    try {
      const flow = JSON.parse(Buffer.from(unsigned.value, 'base64url').toString('utf8')) as IdpFlow
      return typeof flow.state === 'string' && typeof flow.expiresAt === 'number' ? flow : null
    } catch {
      return null
    }
  }
}
