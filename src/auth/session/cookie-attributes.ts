// What the service's auth cookies share (docs/http-contract.md, "Sessions and cookies"): the
// `__Secure-` prefix over HTTPS, the attributes, and reading a signed value back.
import type { FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'

/** better-auth's cookie name, with the `__Secure-` prefix when cookies are secure. */
export const cookieName = (config: Config['auth'], baseName: string): string =>
  config.secureCookies ? `__Secure-${baseName}` : baseName

/**
 * A cookie no sibling subdomain may plant (the guest binding, the provider flow): over HTTPS named
 * `__Host-`, which browsers take only from this host with Secure, Path=/ and no Domain; over plain
 * http (development) the prefix is not allowed and the name is bare. A `__Secure-` cookie may carry
 * a Domain, so that prefix does not stop a planter.
 */
export const hostCookieName = (config: Config['auth'], baseName: string): string =>
  config.secureCookies ? `__Host-${baseName}` : baseName

/** `cookieAttributes` without the configured domain: what a `hostCookieName` cookie is set with. */
export const hostCookieAttributes = (config: Config['auth']) => ({ ...cookieAttributes(config), domain: undefined })

/** Host-wide, HttpOnly, SameSite=Lax, Secure over HTTPS, on the configured domain. */
export function cookieAttributes(config: Config['auth']) {
  return {
    path: '/',
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: config.secureCookies,
    domain: config.cookieDomain,
  }
}

/**
 * The request's cookies, parsed on first use: @fastify/cookie is registered without its parsing
 * hook, since most requests (probes, the API's reads by a client that sends no cookie) never read one.
 */
export function cookiesOf(request: FastifyRequest): FastifyRequest['cookies'] {
  const header = request.headers.cookie
  request.cookies ??= header ? request.server.parseCookie(header) : {}
  return request.cookies
}

/** The cookie's value when it is present and its signature verifies under any configured key. */
export function readSignedCookie(request: FastifyRequest, name: string): string | null {
  const raw = cookiesOf(request)[name]
  if (!raw) return null
  const result = request.unsignCookie(raw)
  return result.valid && result.value ? result.value : null
}
