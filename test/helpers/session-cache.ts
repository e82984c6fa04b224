// Asking an app whether its session cache (src/auth/session/cache.ts) is in use, and waiting for
// a change to show.
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { call, sessionCookieOf, type TestUser } from './app.js'

export const whoami = (app: FastifyInstance, user: TestUser) => call(app, 'GET', '/api/v1/whoami', { cookie: user.cookie })
export const hits = (app: FastifyInstance) => app.sessionCache.stats.hits

/** The user signed in once more on `app`: the same user, holding that new session's cookie. */
export async function signInAgain(
  app: FastifyInstance,
  user: TestUser,
  options: { rememberMe?: boolean } = {},
): Promise<TestUser> {
  const res = await call(app, 'POST', '/api/auth/sign-in/email', {
    body: { email: user.email, password: user.password, ...options },
  })
  return { ...user, cookie: sessionCookieOf(res)! }
}

/** Resolves once the app's listener is up (the cache is bypassed before). */
export async function listening(app: FastifyInstance, deadlineMs = 5_000): Promise<void> {
  const start = Date.now()
  while (!app.sessionCache.listening) {
    if (Date.now() - start > deadlineMs) throw new Error('the session cache listener did not come up')
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** Asks until `check` holds; the milliseconds it took, or throws past the deadline. */
export async function within(deadlineMs: number, check: () => Promise<boolean>): Promise<number> {
  const start = performance.now()
  for (;;) {
    if (await check()) return Math.round((performance.now() - start) * 10) / 10
    if (performance.now() - start > deadlineMs) throw new Error(`not seen within ${deadlineMs} ms`)
    await new Promise((r) => setTimeout(r, 2))
  }
}

/** Makes sure the next request with this session is answered from memory. */
export async function cached(t: Test, app: FastifyInstance, user: TestUser): Promise<void> {
  await listening(app)
  await whoami(app, user)
  const before = hits(app)
  t.equal((await whoami(app, user)).statusCode, 200)
  t.equal(hits(app), before + 1, 'the session is served from memory')
}
