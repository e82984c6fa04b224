// A real browser (headless Chromium) buys deep insights through the sandbox gateway's page.
import { existsSync } from 'node:fs'
import t from 'tap'
import { buildTestApp, call, signUp, WEB_ORIGIN } from '../helpers/app.js'
import { CHROMIUM, launchChromium, serveOrigin } from '../helpers/chromium.js'
import { deepInsightsCheckout, startCheckout, verify } from '../helpers/gateways.js'
import { freePort } from '../helpers/port.js'

if (!existsSync(CHROMIUM)) {
  t.test(
    'a member buys deep insights in a real browser',
    { skip: `Chromium is absent (${CHROMIUM}): install Debian's chromium package to run the browser purchase test` },
    async () => {},
  )
} else {
  // The web front end the gateway sends the browser back to (the API calls below come from WEB_ORIGIN, also trusted).
  const webPort = await serveOrigin(
    (req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      res.end(`<!doctype html><title>Thanks</title><h1 id="done">Back on the web app: ${req.url?.length ?? 0}</h1>`)
    },
    { host: '127.0.0.1' },
  )
  const webOrigin = `http://127.0.0.1:${webPort}`

  const port = await freePort()
  const apiOrigin = `http://127.0.0.1:${port}`
  const app = await buildTestApp({ env: { AUTH_URL: apiOrigin, WEB_ORIGIN: webOrigin, AUTH_TRUSTED_ORIGIN: WEB_ORIGIN } })
  await app.listen({ port, host: '127.0.0.1' })

  const browser = await launchChromium()

  t.test('a member buys deep insights by pressing Pay on the sandbox page', async (t) => {
    const { user, resultId, checkout } = await deepInsightsCheckout(app, (resultId) => `${webOrigin}/results/${resultId}`)
    t.equal(checkout.redirectUrl, `${apiOrigin}/api/v1/payments/sandbox/${checkout.paymentId}`)

    const page = await browser.newPage()
    const errors: string[] = []
    page.on('pageerror', (err) => errors.push(err.message))
    page.on('console', (msg) => {
      if (msg.type() === 'error') errors.push(msg.text())
    })
    await page.goto(checkout.redirectUrl)
    t.equal(await page.textContent('#amount'), 'Rp 49.000')
    await Promise.all([page.waitForURL(`${webOrigin}/**`, { timeout: 20_000 }), page.click('#pay')])
    const back = new URL(page.url())
    t.equal(back.pathname, `/results/${resultId}`)
    t.equal(back.searchParams.get('paymentId'), checkout.paymentId)
    t.ok(await page.isVisible('#done'))
    t.same(errors, [], 'no script errors (the page runs under its CSP)')
    await page.close()

    const verified = await verify(app, user, checkout.paymentId)
    t.match(verified.json(), { status: 'paid', product: 'deep_insights', grantedAt: String })
    const result = await call(app, 'GET', `/api/v1/compatibility/results/${resultId}`, { cookie: user.cookie })
    t.equal(result.json().deepInsightsUnlocked, true)
  })

  t.test('Cancel sends the browser back marked cancelled and the payment failed', async (t) => {
    const user = await signUp(app)
    const checkout = await startCheckout(app, user, { product: 'premium_month', returnUrl: '/account' })
    const page = await browser.newPage()
    await page.goto(checkout.redirectUrl)
    await Promise.all([page.waitForURL(`${webOrigin}/**`, { timeout: 20_000 }), page.click('#cancel')])
    const back = new URL(page.url())
    t.equal(back.pathname, '/account', 'a relative returnUrl is on the web front end')
    t.equal(back.searchParams.get('status'), 'cancelled')
    await page.close()
    t.equal((await verify(app, user, checkout.paymentId)).json().status, 'failed')
  })
}
