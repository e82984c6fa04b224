// better-auth's own client over a real socket, with a cookie jar and the web front end's Origin,
// as a browser would drive the service.
import { createAuthClient } from 'better-auth/client'
import { adminClient, inferAdditionalFields } from 'better-auth/client/plugins'
import type { FastifyInstance } from 'fastify'
import { WEB_ORIGIN } from './app.js'

/** `AUTH_URL` of an app listening on 127.0.0.1:`port`. */
export const apiUrl = (port: number) => `http://127.0.0.1:${port}`

/**
 * A minimal browser: keeps cookies from Set-Cookie (and every Set-Cookie header it saw, in
 * `setCookies`), sends them back, and sends its Origin. Redirects are not followed unless asked.
 */
export function cookieJarFetch(redirect: RequestRedirect = 'manual') {
  const jar = new Map<string, string>()
  const setCookies: string[] = []
  const fetchWithJar = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init)
    const headers = new Headers(request.headers)
    headers.set('origin', WEB_ORIGIN)
    if (jar.size) headers.set('cookie', [...jar].map(([k, v]) => `${k}=${v}`).join('; '))
    const res = await fetch(new Request(request, { headers }), { redirect })
    for (const cookie of res.headers.getSetCookie()) {
      setCookies.push(cookie)
      const [pair, ...attributes] = cookie.split(';')
      const [name, ...rest] = pair!.split('=')
      const value = rest.join('=')
      const expired = value === '' || attributes.some((a) => /^\s*max-age=0\s*$/i.test(a))
      if (expired) jar.delete(name!.trim())
      else jar.set(name!.trim(), value)
    }
    return res
  }
  return { jar, setCookies, fetch: fetchWithJar }
}

/**
 * A signed-out browser with better-auth's client and its adminClient(), as an admin panel builds
 * it, pointed at `baseURL`. Give it another's `browser` to share its cookies (one browser talking
 * to two instances).
 */
export function adminBrowser(baseURL: string, browser = cookieJarFetch()) {
  const client = createAuthClient({
    baseURL,
    // The session field the README's front-end quick start declares for the admin panel.
    plugins: [adminClient(), inferAdditionalFields({ session: { impersonatedBy: { type: 'string', required: false } } })],
    fetchOptions: { customFetchImpl: browser.fetch },
  })
  /** The jar's session cookie as a Cookie header, for app.inject and fetch. */
  const cookie = () => `better-auth.session_token=${browser.jar.get('better-auth.session_token')}`
  return { client, browser, jar: browser.jar, cookie }
}

/** A signed-out browser with better-auth's client pointed at `app` (which must be listening). */
export function authClient(app: FastifyInstance) {
  const { port } = app.server.address() as { port: number }
  const browser = cookieJarFetch()
  const client = createAuthClient({ baseURL: apiUrl(port), fetchOptions: { customFetchImpl: browser.fetch } })
  /** The jar's session cookie as a Cookie header, for app.inject. */
  const cookie = () => `better-auth.session_token=${browser.jar.get('better-auth.session_token')}`
  return { client, jar: browser.jar, fetch: browser.fetch, cookie }
}
