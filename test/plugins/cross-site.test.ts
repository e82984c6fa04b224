// Issue 34, finding 8: a link on another site made the browser of whoever followed it download
// their data export (recording an event) or, for an administrator, write audit rows. Routes that act
// on GET refuse cross-site requests (plugins/origins.ts, refuseCrossSite), judged on what browsers
// send: a top-level navigation from another site carries the SameSite=Lax cookie, Sec-Fetch-Site:
// cross-site and no Origin; the web app's RPCLink calls carry its trusted Origin.
import { createORPCClient } from '@orpc/client'
import { RPCLink } from '@orpc/client/fetch'
import type { ContractRouterClient } from '@orpc/contract'
import type { InjectOptions } from 'fastify'
import t from 'tap'
import type { contract } from '../helpers/contract.js'
import { buildTestApp, signUp, signUpWithRole, type TestUser, WEB_ORIGIN } from '../helpers/app.js'

const EVIL = 'https://evil.example'
const app = await buildTestApp()
await app.listen({ port: 0, host: '127.0.0.1' })
const API = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
const member = await signUp(app)
const admin = await signUpWithRole(app, 'admin')

const eventCount = async (action: string, actorId: string) =>
  (await app.db.selectFrom('audit_event').select('id').where('action', '=', action).where('actor_id', '=', actorId).execute())
    .length

const get = (url: string, user: TestUser, headers: Record<string, string>) =>
  app.inject({ method: 'GET', url, headers: { cookie: user.cookie, ...headers } } satisfies InjectOptions)

/** What a browser sends for each way of reaching a URL, by what it is. */
const REFUSED: Array<[string, Record<string, string>, string]> = [
  [
    'a link followed from another site',
    { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document', referer: `${EVIL}/` },
    'CROSS_SITE_REQUEST',
  ],
  [
    'a redirect from another site, no Referer',
    { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' },
    'CROSS_SITE_REQUEST',
  ],
  ['an unknown Sec-Fetch-Site', { 'sec-fetch-site': 'cross-site, same-origin' }, 'CROSS_SITE_REQUEST'],
  ['a browser without Sec-Fetch-Site, from another site', { referer: `${EVIL}/page` }, 'CROSS_SITE_REQUEST'],
  ['a cookie and nothing else (no-referrer page of an old browser)', {}, 'CROSS_SITE_REQUEST'],
  ['a fetch from a foreign origin', { origin: EVIL, 'sec-fetch-site': 'cross-site' }, 'INVALID_ORIGIN'],
  ['a sandboxed frame', { origin: 'null', 'sec-fetch-site': 'cross-site' }, 'MISSING_OR_NULL_ORIGIN'],
]
const LET_THROUGH: Array<[string, Record<string, string>]> = [
  [
    'a download link in the web app (same site)',
    { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'navigate', referer: `${WEB_ORIGIN}/settings` },
  ],
  ['the API opened from its own pages', { 'sec-fetch-site': 'same-origin' }],
  ['typed in the address bar', { 'sec-fetch-site': 'none' }],
  ["the web app's fetch (CORS, its Origin)", { origin: WEB_ORIGIN, 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'cors' }],
  ['a trusted origin on another site (CORS)', { origin: WEB_ORIGIN, 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' }],
  ['an old browser from the web app', { referer: `${WEB_ORIGIN}/settings` }],
  ['a script that names a trusted Origin', { origin: WEB_ORIGIN }],
]

for (const url of ['/api/v1/me/export', '/api/v1/me/exportMyData']) {
  t.test(`${url}: a cross-site request is refused and records nothing`, async (t) => {
    for (const [what, headers, code] of REFUSED) {
      const before = await eventCount('personal_data.exported', member.id)
      const res = await get(url, member, headers)
      const body = res.json()
      t.same([res.statusCode, body.code ?? body.json?.code], [403, code], what)
      t.notMatch(res.body, member.email, `${what}: no data`)
      t.equal(await eventCount('personal_data.exported', member.id), before, `${what}: no event`)
    }
  })

  t.test(`${url}: the web app's own requests go through`, async (t) => {
    for (const [what, headers] of LET_THROUGH) {
      const before = await eventCount('personal_data.exported', member.id)
      const res = await get(url, member, headers)
      t.equal(res.statusCode, 200, what)
      t.equal(await eventCount('personal_data.exported', member.id), before + 1, `${what}: recorded`)
    }
  })
}

t.test('without a cookie there is no session to act with: 401, as before', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/api/v1/me/export' })
  t.same([res.statusCode, res.json().code], [401, 'UNAUTHORIZED'])
})

for (const [url, action] of [
  ['/api/v1/admin/audit', 'admin.audit.listed'],
  ['/api/v1/admin/listAuditEvents', 'admin.audit.listed'],
  ['/api/v1/admin/analytics/usage', 'admin.analytics.viewed'],
  ['/api/v1/admin/getUsageAnalytics', 'admin.analytics.viewed'],
] as const) {
  t.test(`${url}: an administrator's browser sent from another site writes no audit row`, async (t) => {
    for (const [what, headers, code] of REFUSED) {
      const before = await eventCount(action, admin.id)
      const res = await get(url, admin, headers)
      const body = res.json()
      t.same([res.statusCode, body.code ?? body.json?.code], [403, code], what)
      t.equal(await eventCount(action, admin.id), before, `${what}: no audit row`)
    }
    const before = await eventCount(action, admin.id)
    // A procedure's GET carries its input in `data` (RPCLink's encoding).
    const input = url.includes('/admin/list') || url.includes('/admin/get') ? `?data=${encodeURIComponent('{"json":{}}')}` : ''
    t.equal((await get(`${url}${input}`, admin, { 'sec-fetch-site': 'same-site' })).statusCode, 200, 'from the web app')
    t.equal(await eventCount(action, admin.id), before + 1)
  })
}

t.test('a GET that only reads is not concerned: a cross-site link to whoami answers', async (t) => {
  const res = await get('/api/v1/whoami', member, { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' })
  t.equal(res.statusCode, 200)
})

t.test('RPCLink from the trusted web origin calls the export and the audited reads, over a real socket', async (t) => {
  const client = (user: TestUser, extra: Record<string, string> = {}): ContractRouterClient<typeof contract> =>
    createORPCClient(
      new RPCLink({
        url: `${API}/api/v1`,
        headers: { origin: WEB_ORIGIN, cookie: user.cookie, ...extra },
        method: (_, path) => (/^(get|list|export)/.test(path.at(-1)!) ? 'GET' : 'POST'),
      }),
    )
  const exported = await client(member).me.exportMyData()
  t.equal((exported.profile as { email?: string }).email, member.email)
  // What a browser adds to RPCLink's fetch from a trusted origin on the same site, and on another.
  for (const site of ['same-site', 'cross-site']) {
    const viaBrowser = client(member, { 'sec-fetch-site': site, 'sec-fetch-mode': 'cors' })
    t.ok((await viaBrowser.me.exportMyData()).exportedAt, site)
  }
  const audit = await client(admin, { 'sec-fetch-site': 'same-site' }).admin.listAuditEvents({})
  t.ok(Array.isArray(audit.items))
  t.ok((await client(admin).admin.getUsageAnalytics({})).activeSessions !== undefined)

  // The same client from an untrusted origin is refused.
  const evil = createORPCClient<ContractRouterClient<typeof contract>>(
    new RPCLink({ url: `${API}/api/v1`, headers: { origin: EVIL, cookie: member.cookie }, method: () => 'GET' }),
  )
  await t.rejects(evil.me.exportMyData(), { code: 'INVALID_ORIGIN', status: 403 })
})
