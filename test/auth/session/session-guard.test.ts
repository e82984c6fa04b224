// A route that needs a session refuses an anonymous caller with 401 before reading its body, so a
// malformed body never turns that 401 into a 400 that describes the route's schema. The route walk
// (route-policy.test.ts) sends every state-changing route an empty object, already a malformed body
// for the others; these are the routes for which an empty object is well-formed.
import t from 'tap'
import { buildTestApp, call } from '../../helpers/app.js'

const app = await buildTestApp()

const routes: Array<[method: 'PATCH' | 'POST' | 'DELETE', url: string]> = [
  ['PATCH', '/api/v1/profile'],
  ['POST', '/api/v1/usage/aiMessages/increment'],
  ['DELETE', '/api/v1/me'],
]

for (const [method, url] of routes) {
  t.test(`${method} ${url} without a session and with a bad body is 401`, async (t) => {
    const res = await call(app, method, url, { body: { role: 'owner', nonsense: [1, 2, 3] } })
    t.equal(res.statusCode, 401)
    t.match(res.json(), { code: 'UNAUTHORIZED', status: 401 })
  })
}
