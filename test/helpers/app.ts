// The real app on the file's database, plus small helpers to drive it like a browser would.
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import t from 'tap'
import { buildApp, type AppDeps } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { testDatabase } from './db.js'
import { GENEROUS_RATE_LIMITS } from './limits.js'

export const WEB_ORIGIN = 'http://localhost:3000'
export const TEST_SECRET = 'test-secret-that-is-long-enough-0123456789'

export const TEST_ENV: Record<string, string> = {
  NODE_ENV: 'test',
  LOG_LEVEL: 'silent',
  AUTH_SECRET: TEST_SECRET,
  AUTH_URL: 'http://localhost:8787',
  WEB_ORIGIN,
  // Generous limits so ordinary tests are not throttled; rate-limit tests set their own.
  ...GENEROUS_RATE_LIMITS,
}

export async function buildTestApp(
  options: { env?: Record<string, string>; deps?: Omit<AppDeps, 'database'> } = {},
): Promise<FastifyInstance> {
  const config = loadConfig({ ...TEST_ENV, ...options.env })
  const app = await buildApp(config, { ...options.deps, database: await testDatabase() })
  t.teardown(() => app.close())
  await app.ready()
  return app
}

/**
 * A clock for an app's `deps.clock` that the tests move: `set(ms)` puts it `ms` ahead of the real
 * time. Every test of the file starts on the real time again.
 */
export function movableClock() {
  let offsetMs = 0
  t.afterEach(() => {
    offsetMs = 0
  })
  return {
    now: () => new Date(Date.now() + offsetMs),
    set: (ms: number) => {
      offsetMs = ms
    },
  }
}

let counter = 0
export const uniqueEmail = (prefix = 'user') => `${prefix}-${process.pid}-${Date.now()}-${counter++}@example.com`

/** `name=value` of the session cookie a response set, as a browser would send it back. */
export function sessionCookieOf(res: LightMyRequestResponse): string | undefined {
  const header = res.headers['set-cookie']
  const all = Array.isArray(header) ? header : header ? [header] : []
  const found = all.find((c) => /session_token=[^;]+/.test(c) && !/session_token=;/.test(c))
  return found?.split(';', 1)[0]
}

/** A request as the web front end sends it: trusted Origin, JSON, and the cookie when given. */
export function call(
  app: FastifyInstance,
  method: InjectOptions['method'],
  url: string,
  options: { cookie?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { origin: WEB_ORIGIN, ...options.headers }
  if (options.cookie) headers.cookie = options.cookie
  return app.inject({ method, url, headers, ...(options.body !== undefined ? { payload: options.body as object } : {}) })
}

export interface TestUser {
  id: string
  email: string
  password: string
  cookie: string
}

/** POSTs a new record as `user` and returns its JSON: a step that must work, so anything but 201 throws. */
export async function createAs<T>(app: FastifyInstance, user: TestUser, url: string, body: unknown): Promise<T> {
  const res = await call(app, 'POST', url, { cookie: user.cookie, body })
  if (res.statusCode !== 201) throw new Error(`POST ${url} failed: ${res.statusCode} ${res.body}`)
  return res.json() as T
}

/** Signs up a new member and returns their session cookie. */
export async function signUp(
  app: FastifyInstance,
  overrides: { email?: string; password?: string; name?: string } = {},
): Promise<TestUser> {
  const email = overrides.email ?? uniqueEmail()
  const password = overrides.password ?? 'correct horse battery staple'
  const res = await call(app, 'POST', '/api/auth/sign-up/email', {
    body: { name: overrides.name ?? 'Test User', email, password },
  })
  if (res.statusCode !== 200) throw new Error(`sign-up failed: ${res.statusCode} ${res.body}`)
  const cookie = sessionCookieOf(res)
  if (!cookie) throw new Error('sign-up set no session cookie')
  return { id: res.json().user.id, email, password, cookie }
}

/**
 * Marks the user's address as proven by every session the account has now, as a verification code
 * typed in each would (test/auth/second-factor.test.ts drives that): those sessions may then set up
 * a second factor for a day of the app's clock. A session born later holds no such proof.
 */
export async function proveAddress(app: FastifyInstance, userId: string): Promise<void> {
  await app.db.updateTable('user').set({ email_verified: true, ways_in_unproven: false }).where('id', '=', userId).execute()
  await app.db.updateTable('session').set({ email_proven_at: app.clock.now() }).where('user_id', '=', userId).execute()
}

/** Signs up a user and gives them a role directly in the database (the API never grants owner). */
export async function signUpWithRole(app: FastifyInstance, role: 'member' | 'admin' | 'owner'): Promise<TestUser> {
  const user = await signUp(app)
  await app.db.updateTable('user').set({ role }).where('id', '=', user.id).execute()
  return user
}
