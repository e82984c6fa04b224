// End to end in real headless Chromium: a web page on one origin signs in through the provider's
// login form and then reads the session from the API on another origin. Proves the redirects, the
// cookie attributes and the hand-written CORS together.
//
// Origins: web http://localhost:W, API http://localhost:A (same site, different origins: the Lax
// session cookie rides along on the page's credentialed fetch), provider http://127.0.0.1:P (a
// different site, as a real provider is).
import { existsSync } from 'node:fs'
import type { RequestListener } from 'node:http'
import t from 'tap'
import { buildTestApp, uniqueEmail } from '../../helpers/app.js'
import { CHROMIUM, launchChromium, serveOrigin } from '../../helpers/chromium.js'
import { CLIENT_ID, CLIENT_SECRET, startOidcProvider } from '../../helpers/idp.js'
import { freePort } from '../../helpers/port.js'

if (!existsSync(CHROMIUM)) {
  t.plan(0, `${CHROMIUM} is absent: install Debian's chromium (apt-get install -y chromium) to run the browser test`)
} else {
  const apiPort = await freePort()
  const webPort = await freePort()
  const API = `http://localhost:${apiPort}`
  const WEB = `http://localhost:${webPort}`

  const idp = await startOidcProvider(`${API}/api/auth/callback/idp`)
  const app = await buildTestApp({
    env: { AUTH_URL: API, WEB_ORIGIN: WEB, IDP_ISSUER: idp.issuer, IDP_CLIENT_ID: CLIENT_ID, IDP_CLIENT_SECRET: CLIENT_SECRET },
  })
  // 'localhost' makes Fastify listen on every loopback address the name resolves to.
  await app.listen({ port: apiPort, host: 'localhost' })

  const web: RequestListener = (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    if (req.url === '/') {
      const href = `${API}/api/auth/sign-in/idp?${new URLSearchParams({ callbackURL: `${WEB}/done` })}`
      res.end(`<!doctype html><title>Web</title><a id="signin" href="${href.replace(/&/g, '&amp;')}">Sign in</a>`)
      return
    }
    res.end(`<!doctype html><title>Done</title><pre id="out">pending</pre>
<script>
fetch(${JSON.stringify(`${API}/api/auth/get-session`)}, { credentials: 'include' })
  .then((r) => r.text())
  .then((text) => { document.getElementById('out').textContent = text })
  .catch((err) => { document.getElementById('out').textContent = 'fetch failed: ' + err })
</script>`)
  }
  await serveOrigin(web, { port: webPort, host: '127.0.0.1' })

  const browser = await launchChromium()

  t.test('a page on the web origin signs in through the provider and reads the session cross-origin', async (t) => {
    const email = uniqueEmail('idp-browser')
    const sub = `browser-${process.pid}`
    idp.accounts.set(sub, { email, email_verified: true, name: 'Browser User' })

    const context = await browser.newContext()
    t.teardown(() => context.close())
    const page = await context.newPage()
    await page.goto(`${WEB}/`)
    await page.click('#signin')

    // The provider's own login form (oidc-provider devInteractions).
    await page.waitForSelector('input[name="login"]', { timeout: 20_000 })
    t.equal(new URL(page.url()).origin, idp.issuer)
    await page.fill('input[name="login"]', sub)
    await page.fill('input[name="password"]', 'anything')
    await page.click('button[type="submit"]')

    await page.waitForURL(`${WEB}/done`, { timeout: 20_000 })
    await page.waitForFunction(() => document.getElementById('out')?.textContent !== 'pending', undefined, { timeout: 20_000 })
    const text = await page.textContent('#out')
    const body = JSON.parse(text ?? 'null') as { user: { email: string; name: string }; session: { userId: string } } | null
    t.ok(body, `the API answered a session to the web origin (got ${text})`)
    t.equal(body?.user.email, email)
    t.equal(body?.user.name, 'Browser User')

    const cookies = await context.cookies(API)
    const session = cookies.find((c) => c.name === 'better-auth.session_token')
    t.ok(session, 'the session cookie is set for the API host')
    t.equal(session?.httpOnly, true)
    t.equal(session?.sameSite, 'Lax')
    t.notOk(
      cookies.find((c) => c.name === 'idp_flow'),
      'the flow cookie was spent',
    )
    t.equal(await page.evaluate(() => document.cookie.includes('session_token')), false, 'scripts cannot read it')
  })
}
