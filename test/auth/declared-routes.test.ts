// Each /api/auth route is declared once (src/auth/routes/serve.ts) and served as declared: the
// router serves exactly the declared routes, each with its declared policy, and the OpenAPI
// document lists each under its declared operationId with the statuses it declares. The one
// exception: /api/auth/admin/*, better-auth's admin plugin's wire, is the admin domain's
// (src/admin/auth-routes.ts; src/auth/ may not import src/admin/), walked by test/admin/admin-plugin.test.ts.
import t from 'tap'
import { AUTH_ROUTES } from '../../src/auth/plugin.js'
import { buildTestApp } from '../helpers/app.js'
import { routerEntries } from '../helpers/routes.js'

const declared = AUTH_ROUTES.flatMap((family) =>
  Object.entries(family.declared).map(([operationId, route]) => ({ operationId, ...route })),
)
const key = (method: string, path: string) => `${method} ${path}`
const ADMIN_PLUGIN = '/api/auth/admin/'
// Every family on, those behind a switch too (sign-in by phone), so that every declared route is served.
const ALL_ON = { env: { PHONE_SIGN_IN: 'true' } }

t.test('the router serves every declared route once, and no /api/auth route that is not declared', async (t) => {
  const app = await buildTestApp(ALL_ON)
  const entries = routerEntries(app).filter(([method, path]) => path.startsWith('/api/auth/') && method !== 'HEAD')
  const admin = entries.filter(([, path]) => path.startsWith(ADMIN_PLUGIN))
  t.ok(admin.length >= 10, `${admin.length} routes of the admin plugin, served by src/admin/auth-routes.ts`)
  const served = entries.filter(([, path]) => !path.startsWith(ADMIN_PLUGIN)).map(([method, path]) => key(method, path))
  const declaredKeys = declared.map((route) => key(route.method, route.path))
  t.ok(declared.length >= 45, `${declared.length} routes declared`)
  t.same(new Set(declaredKeys).size, declaredKeys.length, 'no route declared twice')
  t.same([...served].sort(), declaredKeys.filter((k) => k.includes(' /api/auth/')).sort(), 'served = declared')
  const off = routerEntries(await buildTestApp()).filter(([, path]) => path.startsWith('/api/auth/phone-number/'))
  t.same(off, [], 'with its switch off, a family behind one is not served')
  const ids = declared.map((route) => route.operationId)
  t.same(new Set(ids).size, ids.length, 'each operationId names one route')
})

t.test('each route carries its declared policy, operationId and error statuses', async (t) => {
  const app = await buildTestApp(ALL_ON)
  const spec = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json()
  for (const route of declared) {
    const registered = app.registeredRoutes.find((r) => r.method === route.method && r.url === route.path)
    t.same(registered?.config?.policy, route.policy, `${route.operationId}: its policy`)
    const entry = spec.paths[route.path.replace(/:(\w+)/g, '{$1}')]?.[route.method.toLowerCase()]
    t.equal(entry?.operationId, route.operationId, `${route.method} ${route.path} is ${route.operationId} in OpenAPI`)
    const statuses = Object.keys(entry?.responses ?? {}).map(Number)
    for (const status of [...Object.keys(route.response).map(Number), ...(route.errors ?? [])]) {
      t.ok(statuses.includes(status), `${route.operationId} documents ${status}`)
    }
  }
})
