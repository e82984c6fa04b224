// Each /api/auth route is declared once (src/auth/routes/serve.ts) and served as declared: the
// router serves exactly the declared routes, each with its declared policy, and the OpenAPI
// document lists each under its declared operationId with the statuses it declares. The families
// are auth's (AUTH_ROUTES) and the admin domain's better-auth admin plugin (/api/auth/admin/*,
// src/admin/auth-routes.ts: src/auth/ may not import src/admin/, so it is registered by src/app.ts).
import t from 'tap'
import adminPluginRoutes from '../../src/admin/auth-routes.js'
import { AUTH_ROUTES } from '../../src/auth/plugin.js'
import { buildTestApp } from '../helpers/app.js'
import { routerEntries } from '../helpers/routes.js'

const declared = [...AUTH_ROUTES, adminPluginRoutes].flatMap((family) =>
  Object.entries(family.declared).map(([operationId, route]) => ({ operationId, ...route })),
)
const key = (method: string, path: string) => `${method} ${path}`
// Every family on, those behind a switch too (sign-in by phone), so that every declared route is served.
const ALL_ON = { env: { PHONE_SIGN_IN: 'true' } }

t.test('the router serves every declared route once, and no /api/auth route that is not declared', async (t) => {
  const app = await buildTestApp(ALL_ON)
  const entries = routerEntries(app).filter(([method, path]) => path.startsWith('/api/auth/') && method !== 'HEAD')
  const admin = declared.filter((route) => route.path.startsWith('/api/auth/admin/'))
  t.ok(admin.length >= 10, `${admin.length} routes of the admin plugin declared`)
  const served = entries.map(([method, path]) => key(method, path))
  const declaredKeys = declared.map((route) => key(route.method, route.path))
  t.ok(declared.length >= 55, `${declared.length} routes declared`)
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
