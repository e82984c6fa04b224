// The existing web client keeps working: better-auth's own client library drives the service
// over a real socket, with a cookie jar, as a browser would.
import { createAuthClient } from 'better-auth/client'
import t from 'tap'
import { buildTestApp, uniqueEmail } from '../helpers/app.js'
import { cookieJarFetch } from '../helpers/auth-client.js'

const app = await buildTestApp()
await app.listen({ port: 0, host: '127.0.0.1' })
const address = app.server.address() as { port: number }
const baseURL = `http://127.0.0.1:${address.port}`

t.test("sign-up, get-session, sign-out and sign-in through better-auth's client", async (t) => {
  const { jar, fetch: customFetchImpl } = cookieJarFetch('follow')
  const client = createAuthClient({ baseURL, fetchOptions: { customFetchImpl } })
  const email = uniqueEmail('client')
  const password = 'correct horse battery staple'

  const signedUp = await client.signUp.email({ name: 'Client User', email, password })
  t.equal(signedUp.error, null, JSON.stringify(signedUp.error))
  t.equal(signedUp.data?.user.email, email)
  t.ok(jar.has('better-auth.session_token'), 'the jar holds the session cookie')

  const session = await client.getSession()
  t.equal(session.error, null)
  t.equal(session.data?.user.email, email)
  t.equal(session.data?.user.name, 'Client User')
  t.type(session.data?.session.id, 'string')
  t.type(session.data?.session.expiresAt, Date, 'the client parsed the ISO date')

  const out = await client.signOut()
  t.equal(out.error, null)
  t.same(out.data, { success: true })
  t.notOk(jar.has('better-auth.session_token'), 'the cookie was expired')
  t.equal((await client.getSession()).data, null)

  const wrong = await client.signIn.email({ email, password: 'not the password' })
  t.equal(wrong.error?.status, 401)
  t.equal(wrong.error?.code, 'INVALID_EMAIL_OR_PASSWORD')

  const signedIn = await client.signIn.email({ email, password })
  t.equal(signedIn.error, null)
  t.equal(signedIn.data?.user.email, email)
  t.equal((await client.getSession()).data?.user.email, email)
})
