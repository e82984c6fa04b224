// A route that needs a session refuses an anonymous caller with 401 before reading its body, so a
// malformed body never turns that 401 into a 400 that describes the route's schema.
import t from 'tap'
import { buildTestApp, call } from '../helpers/app.js'

const app = await buildTestApp()

const routes: Array<[method: 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'GET', url: string]> = [
  ['POST', '/api/v1/updateProfile'],
  ['POST', '/api/v1/usage/aiMessages/increment'],
  ['POST', '/api/v1/journal/entries'],
  ['PATCH', '/api/v1/journal/entries/x'],
  ['POST', '/api/v1/compatibility/results'],
  ['POST', '/api/v1/payments/checkout'],
  ['POST', '/api/v1/consent'],
  ['DELETE', '/api/v1/me'],
  ['POST', '/api/auth/change-password'],
  ['GET', '/api/v1/whoami'],
  ['POST', '/api/v1/admin/users/x/role'],
]

for (const [method, url] of routes) {
  t.test(`${method} ${url} without a session and with a bad body is 401`, async (t) => {
    const res = await call(app, method, url, method === 'GET' ? {} : { body: { role: 'owner', nonsense: [1, 2, 3] } })
    t.equal(res.statusCode, 401)
    t.match(res.json(), { code: 'UNAUTHORIZED', status: 401 })
  })
}
