// Two server processes on different ports against one PostgreSQL and one Redis: nothing is kept
// per instance, so sessions, sign-outs, usage limits and rate limits are shared, not doubled.
import t from 'tap'
import { openDatabase } from '../db/index.js'
import { migrateToLatest } from '../db/migrate.js'
import { WEB_ORIGIN } from './helpers/app.js'
import { adminBrowser, cookieJarFetch } from './helpers/auth-client.js'
import { freshPostgresUrl, usingPostgres } from './helpers/db.js'
import { startServer, type ServerProcess } from './helpers/server-process.js'

if (!usingPostgres()) {
  t.skip(
    'two instances need a shared PostgreSQL server: set DATABASE_URL (the embedded database is single-process)',
    async () => {},
  )
} else {
  const databaseUrl = await freshPostgresUrl()
  const handle = await openDatabase({ url: databaseUrl, pgliteDir: 'memory://', poolSize: 2 })
  await migrateToLatest(handle.db)
  const redisUrl = process.env.REDIS_URL
  const prefix = `two-instances-${process.pid}-${Date.now()}`
  const env = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    RATE_LIMIT_SIGN_IN_IP_PER_MINUTE: '6',
    REDIS_KEY_PREFIX: prefix,
  }
  const [a, b] = (await Promise.all([startServer(env), startServer(env)])) as [ServerProcess, ServerProcess]
  t.teardown(async () => {
    await Promise.all([a.stop(), b.stop()])
    await handle.close()
  })

  const send = async (server: ServerProcess, method: string, path: string, body?: unknown, cookie?: string) => {
    const headers: Record<string, string> = { origin: WEB_ORIGIN }
    if (body !== undefined) headers['content-type'] = 'application/json'
    if (cookie) headers.cookie = cookie
    const res = await fetch(server.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : null, setCookie: res.headers.getSetCookie() }
  }
  const email = `two-${Date.now()}@example.com`
  const password = 'correct horse battery staple'
  let cookie = ''

  t.test('a session made on one instance is valid on the other', async (t) => {
    const res = await send(a, 'POST', '/api/auth/sign-up/email', { name: 'Two', email, password })
    t.equal(res.status, 200)
    cookie = res.setCookie.map((c) => c.split(';', 1)[0]!).find((c) => c.includes('session_token='))!
    t.ok(cookie)
    const other = await send(b, 'GET', '/api/auth/get-session', undefined, cookie)
    t.equal(other.status, 200)
    t.equal(other.body.user.email, email)
  })

  t.test('a sign-out on one instance is refused on the other at the next request', async (t) => {
    t.equal((await send(a, 'POST', '/api/auth/sign-out', {}, cookie)).status, 200)
    t.equal((await send(b, 'GET', '/api/v1/whoami', undefined, cookie)).status, 401)
    t.equal((await send(b, 'GET', '/api/auth/get-session', undefined, cookie)).body, null)
  })

  t.test('a usage limit is shared, not doubled', async (t) => {
    const signIn = await send(b, 'POST', '/api/auth/sign-in/email', { email, password })
    t.equal(signIn.status, 200)
    const c = signIn.setCookie.map((x) => x.split(';', 1)[0]!).find((x) => x.includes('session_token='))!
    // free plan: aiMessages 10 per day; 30 increments spread over both instances, all at once
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => send(i % 2 ? a : b, 'POST', '/api/v1/usage/aiMessages/increment', {}, c)),
    )
    t.equal(results.filter((r) => r.status === 200).length, 10)
    t.equal(results.filter((r) => r.status === 402).length, 20)
  })

  const noRedis = redisUrl ? false : 'REDIS_URL is not set: the shared rate-limit store cannot be tested'
  t.test('a rate limit is shared through Redis, not doubled', { skip: noRedis }, async (t) => {
    // sign-in: 6 per minute per IP in total, whichever instance answers
    const statuses: number[] = []
    for (let i = 0; i < 12; i++) {
      const res = await send(i % 2 ? a : b, 'POST', '/api/auth/sign-in/email', { email: `nobody-${i}@example.com`, password })
      statuses.push(res.status)
    }
    // the sign-in above (usage test) already used one of the 6
    t.equal(statuses.filter((s) => s === 429).length, 7, `statuses: ${statuses.join(',')}`)
  })

  t.test('an impersonation started on one instance is seen, and ended, on the other', async (t) => {
    const signUpAs = async (role: 'member' | 'admin' | 'owner') => {
      const user = { name: role, email: `${role}-${Date.now()}-${Math.random()}@example.com`, password }
      const res = await send(a, 'POST', '/api/auth/sign-up/email', user)
      await handle.db.updateTable('user').set({ role }).where('id', '=', res.body.user.id).execute()
      // Signed in by the sign-up itself: the sign-in budget is spent by the test above.
      const session = res.setCookie.map((c) => c.split(';', 1)[0]!).find((c) => c.startsWith('better-auth.session_token='))!
      return { ...user, id: res.body.user.id as string, session: session.slice(session.indexOf('=') + 1) }
    }
    const [admin, member, owner] = [await signUpAs('admin'), await signUpAs('member'), await signUpAs('owner')]
    // One browser, its requests answered by either instance.
    const browser = cookieJarFetch()
    const onA = adminBrowser(a.url, browser)
    const onB = adminBrowser(b.url, browser)
    browser.jar.set('better-auth.session_token', admin.session)

    const started = await onA.client.admin.impersonateUser({ userId: member.id })
    t.equal(started.error, null)
    const seen = (await onB.client.getSession()).data
    t.same([seen?.user.id, seen?.session.impersonatedBy], [member.id, admin.id], 'seen on the other instance')
    const impersonation = onA.cookie()
    const stopped = await onB.client.admin.stopImpersonating()
    t.equal(stopped.data?.user.id, admin.id, 'ended on the other instance')
    t.equal((await send(a, 'GET', '/api/auth/get-session', undefined, impersonation)).body, null, 'and gone on the first')
    t.equal((await onA.client.getSession()).data?.user.id, admin.id, "the admin's own session is back on both")

    // Revoking the admin on one instance ends their impersonation on the other at once.
    await onA.client.admin.impersonateUser({ userId: member.id })
    const second = onA.cookie()
    t.equal((await send(b, 'GET', '/api/auth/get-session', undefined, second)).body?.user.id, member.id)
    const ownerBrowser = adminBrowser(b.url)
    ownerBrowser.jar.set('better-auth.session_token', owner.session)
    t.equal((await ownerBrowser.client.admin.banUser({ userId: admin.id })).error, null)
    t.equal((await send(a, 'GET', '/api/auth/get-session', undefined, second)).body, null)
  })
}
