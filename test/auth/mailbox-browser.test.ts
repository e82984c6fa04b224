// The mailed sign-in link in real headless Chromium: the page it opens signs nobody in until its
// button is pressed; pressed, the browser holds the session and lands where the link leads.
import { existsSync } from 'node:fs'
import t from 'tap'
import { buildTestApp, uniqueEmail } from '../helpers/app.js'
import { CHROMIUM, launchChromium } from '../helpers/chromium.js'
import { freePort } from '../helpers/port.js'
import { linkIn, startSmtpServer } from '../helpers/smtp.js'

if (!existsSync(CHROMIUM)) {
  t.plan(0, `${CHROMIUM} is absent: install Debian's chromium (apt-get install -y chromium) to run the browser test`)
} else {
  const port = await freePort()
  const API = `http://localhost:${port}`
  const smtp = await startSmtpServer()
  const app = await buildTestApp({ env: { AUTH_URL: API, SMTP_URL: smtp.url } })
  await app.listen({ port, host: 'localhost' })
  const browser = await launchChromium()

  t.test('opening the link signs nobody in; its button does, once, and lands on callbackURL', async (t) => {
    const email = uniqueEmail('link-browser')
    const asked = await app.inject({
      method: 'POST',
      url: '/api/auth/sign-in/magic-link',
      headers: { origin: API },
      payload: { email, callbackURL: `${API}/api/auth/get-session` },
    })
    t.equal(asked.statusCode, 200, asked.body)
    const link = linkIn(await smtp.inbox.next(email))

    const context = await browser.newContext()
    t.teardown(() => context.close())
    const page = await context.newPage()
    const opened = await page.goto(link.toString())
    t.equal(opened?.status(), 200)
    t.same(await context.cookies(), [], 'no cookie from opening the link')
    t.equal(await app.db.selectFrom('user').select('id').where('email', '=', email).executeTakeFirst(), undefined)

    await Promise.all([page.waitForURL(`${API}/api/auth/get-session`), page.click('#sign-in')])
    const session = JSON.parse((await page.textContent('body')) ?? 'null') as { user: { email: string } } | null
    t.equal(session?.user.email, email, 'signed in, on callbackURL')
    const names = (await context.cookies()).map((c) => c.name).sort()
    t.ok(names.includes('better-auth.session_token'))
    t.ok(names.includes('better-auth.last_used_login_method'))
    t.equal(
      await page.evaluate(() => document.cookie.includes('last_used_login_method=magic-link')),
      true,
      'readable by the page',
    )

    // The same link again, in another browser: used.
    const other = await browser.newContext()
    t.teardown(() => other.close())
    const again = await (await other.newPage()).goto(link.toString())
    t.equal(again?.status(), 400)
  })
}
