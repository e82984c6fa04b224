// Passkeys end to end in real headless Chromium: a page of the web front end runs better-auth's
// client with passkeyClient() (bundled with esbuild), and the browser's WebAuthn talks to a virtual
// authenticator (the DevTools protocol's WebAuthn domain: internal, resident keys, user verified).
// Register, sign out, sign in with the passkey, list, rename; another account; a replayed
// assertion; a page on another origin; delete, and sign-in refused after deletion.
import { existsSync } from 'node:fs'
import t from 'tap'
import { buildTestApp, proveAddress, uniqueEmail } from '../helpers/app.js'
import {
  addPlatformAuthenticator,
  bundleForBrowser,
  CHROMIUM,
  launchChromium,
  pageWithScript,
  serveOrigin,
} from '../helpers/chromium.js'
import { ROOT } from '../helpers/paths.js'
import { CHALLENGE_COOKIE } from '../helpers/passkey.js'
import { freePort } from '../helpers/port.js'

const NO_CHROMIUM = `${CHROMIUM} is absent: install Debian's chromium (apt-get install -y chromium) to run the browser test`

// The page's script: the front end's client, and what the replay case does by hand.
const MAIN = `
import { createAuthClient } from 'better-auth/client'
import { passkeyClient } from '@better-auth/passkey/client'
import { startAuthentication } from '@simplewebauthn/browser'

const client = createAuthClient({ baseURL: API, plugins: [passkeyClient()] })

/** One assertion posted twice with its challenge, then once more under a new challenge. */
async function replay() {
  const get = () => fetch(API + '/api/auth/passkey/generate-authenticate-options', { credentials: 'include' }).then((r) => r.json())
  const post = (response) =>
    fetch(API + '/api/auth/passkey/verify-authentication', {
      method: 'POST',
      credentials: 'include',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ response }),
    }).then(async (r) => ({ status: r.status, body: await r.json() }))
  const { clientExtensionResults, ...response } = await startAuthentication({ optionsJSON: await get() })
  const first = await post(response)
  const again = await post(response)
  await get()
  const underNewChallenge = await post(response)
  return { first, again, underNewChallenge }
}

Object.assign(window, { client, startAuthentication, replay, ready: true })
`

const run = existsSync(CHROMIUM) ? await start() : undefined

t.test(
  'a passkey in a real browser, from registration to refusal after deletion',
  { skip: run ? false : NO_CHROMIUM },
  async (t) => {
    const { app, browser, web, evil, api } = run!
    const page = await browser.newPage()
    const { cdp, authenticatorId } = await addPlatformAuthenticator(page)
    const open = async (origin: string) => {
      await page.goto(`${origin}/`)
      await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true)
    }
    // biome-ignore lint/suspicious/noExplicitAny: the page's globals, set by its script
    type Page = any
    await open(web)

    const alice = uniqueEmail('browser-passkey')
    const up = await page.evaluate(
      (email) => (window as Page).client.signUp.email({ name: 'Alice', email, password: 'correct horse battery staple' }),
      alice,
    )
    t.equal(up.error, null, JSON.stringify(up.error))
    const aliceId = up.data.user.id as string
    // As a verification code typed in this session would: a passkey needs the address proven.
    await proveAddress(app, aliceId)

    const added = await page.evaluate(() => (window as Page).client.passkey.addPasskey({ name: 'This browser' }))
    t.equal(added.error, null, JSON.stringify(added.error))
    t.match(added.data, { name: 'This browser', userId: aliceId, transports: 'internal' })
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId })
    t.equal(credentials.length, 1, 'the authenticator holds one credential')
    t.equal(credentials[0]!.isResidentCredential, true, 'discoverable: signs in without a name')
    t.equal(Buffer.from(credentials[0]!.credentialId, 'base64').toString('base64url'), added.data.credentialID)

    t.equal((await page.evaluate(() => (window as Page).client.signOut())).error, null)
    t.equal((await page.evaluate(() => (window as Page).client.getSession())).data, null, 'signed out')

    const signedIn = await page.evaluate(() => (window as Page).client.signIn.passkey())
    t.equal(signedIn.error, null, JSON.stringify(signedIn.error))
    t.equal(signedIn.data?.user.email, alice)
    const session = await page.evaluate(() => (window as Page).client.getSession())
    t.equal(session.data?.user.id, aliceId, 'the page holds the session')
    const row = await app.db
      .selectFrom('session')
      .select('two_factor_verified')
      .where('id', '=', session.data.session.id)
      .executeTakeFirst()
    t.equal(row?.two_factor_verified, true)
    const used = await app.db.selectFrom('passkey').select('counter').where('user_id', '=', aliceId).executeTakeFirstOrThrow()
    t.ok(Number(used.counter) > 0, `the authenticator's signature counter is kept (${used.counter})`)

    const listed = await page.evaluate(() => (window as Page).client.passkey.listUserPasskeys())
    t.same(
      listed.data.map((p: { id: string; name: string }) => [p.id, p.name]),
      [[added.data.id, 'This browser']],
    )
    const renamed = await page.evaluate(
      (id) => (window as Page).client.passkey.updatePasskey({ id, name: 'Chromium' }),
      added.data.id,
    )
    t.equal(renamed.data?.passkey.name, 'Chromium')

    await t.test('another account cannot see, rename or delete it; the passkey signs in its own account', async (t) => {
      await page.evaluate(() => (window as Page).client.signOut())
      const bob = await page.evaluate(
        (email) => (window as Page).client.signUp.email({ name: 'Bob', email, password: 'another fine passphrase' }),
        uniqueEmail('browser-bob'),
      )
      t.equal(bob.error, null)
      t.same((await page.evaluate(() => (window as Page).client.passkey.listUserPasskeys())).data, [])
      const del = await page.evaluate((id) => (window as Page).client.passkey.deletePasskey({ id }), added.data.id)
      t.match(del.error, { status: 404, code: 'PASSKEY_NOT_FOUND' })
      const ren = await page.evaluate((id) => (window as Page).client.passkey.updatePasskey({ id, name: 'Bob' }), added.data.id)
      t.match(ren.error, { status: 404, code: 'PASSKEY_NOT_FOUND' })
      await page.evaluate(() => (window as Page).client.signOut())
      const back = await page.evaluate(() => (window as Page).client.signIn.passkey())
      t.equal(back.data?.user.id, aliceId, "Alice's passkey signs Alice in, in Bob's browser too")
    })

    await t.test('a replayed assertion is refused', async (t) => {
      const { first, again, underNewChallenge } = await page.evaluate(() => (window as Page).replay())
      t.equal(first.status, 200)
      t.match(again.body, { status: 400, code: 'CHALLENGE_NOT_FOUND' })
      t.match(underNewChallenge.body, { status: 401, code: 'AUTHENTICATION_FAILED' })
    })

    await t.test('a page on another origin gets nothing from the passkey', async (t) => {
      // The service fetches options for the phishing page, which has the browser sign them...
      const options = await fetch(`${api}/api/auth/passkey/generate-authenticate-options`, { headers: { origin: web } })
      const cookie = options.headers
        .getSetCookie()
        .find((c) => c.startsWith(`${CHALLENGE_COOKIE}=`))!
        .split(';', 1)[0]!
      await open(evil)
      const assertion = await page.evaluate(
        async (optionsJSON) => {
          const { clientExtensionResults: _, ...response } = await (window as Page).startAuthentication({ optionsJSON })
          return response
        },
        await options.json(),
      )
      const clientData = JSON.parse(Buffer.from(assertion.response.clientDataJSON, 'base64url').toString())
      t.equal(clientData.origin, evil, 'the browser signed for the page it was on')
      // ...and relays the assertion with the web front end's Origin: signed for the wrong page.
      const relayed = await fetch(`${api}/api/auth/passkey/verify-authentication`, {
        method: 'POST',
        headers: { origin: web, cookie, 'content-type': 'application/json' },
        body: JSON.stringify({ response: assertion }),
      })
      t.match(await relayed.json(), { status: 401, code: 'AUTHENTICATION_FAILED' })
      t.notOk(relayed.headers.getSetCookie().some((c) => c.includes('session_token=') && !c.includes('session_token=;')))
      // Straight from the page, its Origin is refused before anything else (no CORS either).
      const direct = await page.evaluate(() =>
        (window as Page).client.signIn.passkey().then(
          (r: { data: unknown; error: unknown }) => ({ data: r.data ?? null, refused: r.error != null }),
          () => ({ data: null, refused: true }),
        ),
      )
      t.same(direct, { data: null, refused: true })
      await open(web)
    })

    await t.test('deleted, the passkey signs nobody in', async (t) => {
      const deleted = await page.evaluate((id) => (window as Page).client.passkey.deletePasskey({ id }), added.data.id)
      t.same(deleted.data, { status: true })
      await page.evaluate(() => (window as Page).client.signOut())
      const refused = await page.evaluate(() => (window as Page).client.signIn.passkey())
      t.match(refused.error, { status: 401, code: 'PASSKEY_NOT_FOUND' })
      t.equal((await page.evaluate(() => (window as Page).client.getSession())).data, null)
      const left = await app.db.selectFrom('passkey').select('id').where('user_id', '=', aliceId).execute()
      t.same(left, [])
    })
  },
)

/** The API, the web front end's origin and a stranger's, both serving the page's bundle, and Chromium. */
async function start() {
  const [apiPort, webPort, evilPort] = [await freePort(), await freePort(), await freePort()]
  const api = `http://localhost:${apiPort}`
  const web = `http://localhost:${webPort}`
  const evil = `http://localhost:${evilPort}`
  const app = await buildTestApp({ env: { AUTH_URL: api, WEB_ORIGIN: web } })
  await app.listen({ port: apiPort, host: 'localhost' })

  const { script } = await bundleForBrowser({
    stdin: { contents: MAIN, resolveDir: ROOT, loader: 'ts' },
    define: { API: JSON.stringify(api) },
  })
  for (const port of [webPort, evilPort]) await serveOrigin(pageWithScript(script), { port })
  const browser = await launchChromium()
  return { app, browser, web, evil, api }
}
