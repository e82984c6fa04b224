// The front end as a newcomer builds it: the contract package packed (npm pack runs its build), the
// example app (examples/web) copied into a scratch folder outside the checkout, its packages installed
// by the README's install line with the tarball, type-checked and built by its own `npm run build`
// (tsc, then Vite). The built app is served from a second origin and driven in headless Chromium
// against the API: sign-up, profile, journal, a sandbox purchase, sign-out, sign-in by code, by
// mailed link, by password with the second step and by passkey. One pack and one install serve it all.
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { extname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { gzipSync } from 'node:zlib'
import { type TOTP, URI } from 'otpauth'
import t from 'tap'
import { buildTestApp, uniqueEmail } from '../helpers/app.js'
import { addPlatformAuthenticator, CHROMIUM, launchChromium, serveOrigin } from '../helpers/chromium.js'
import { ROOT } from '../helpers/paths.js'
import { freePort } from '../helpers/port.js'
import { startSmtpServer } from '../helpers/smtp.js'

t.setTimeout(600_000)

const NO_CHROMIUM = `${CHROMIUM} is absent: install Debian's chromium (apt-get install -y chromium) to run the browser test`
const PACKAGE = join(ROOT, 'packages/contract')
const EXAMPLE = join(ROOT, 'examples/web')
const manifest = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8'))
const example = JSON.parse(readFileSync(join(EXAMPLE, 'package.json'), 'utf8'))
const TARBALL = `${manifest.name}-${manifest.version}.tgz`
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
const frontEndDoc = readFileSync(join(ROOT, 'docs/front-end.md'), 'utf8')
/** The README's line that installs the client packages and the contract into an app. */
const installLine = /^npm install (better-auth@\S+(?: \S+)*)$/m.exec(readme)?.[1]?.split(' ') ?? []

// Outside the checkout, so nothing resolves from the service's own node_modules.
const scratch = mkdtempSync(join(tmpdir(), 'web-example-'))
// At exit, not at the root test's teardown: tap may run that while this file still awaits below.
process.once('exit', () => rmSync(scratch, { recursive: true, force: true }))
const app = join(scratch, 'app')

/** Runs npm as a person would, without the npm_* settings of the `npm test` that runs this file. */
function npm(args: string[], cwd: string, env: Record<string, string> = {}) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('npm_')))
  const run = spawnSync('npm', args, { cwd, env: { ...clean, ...env }, encoding: 'utf8', timeout: 300_000 })
  if (run.status !== 0) throw new Error(`npm ${args.join(' ')}: ${run.status}\n${run.stdout}\n${run.stderr}`)
  return run.stdout
}

const timings: string[] = []
function timed<T>(what: string, step: () => T): T {
  const start = Date.now()
  const result = step()
  timings.push(`${what} ${((Date.now() - start) / 1000).toFixed(1)} s`)
  return result
}

// Everything the tests use is set up before the first test is defined: tap ends the file's root
// test once its queue is empty, even while this module still awaits.
const packed = timed(
  'pack',
  () => JSON.parse(npm(['pack', '--json', '--pack-destination', scratch], PACKAGE))[0] as { files: { path: string }[] },
)
cpSync(EXAMPLE, app, { recursive: true, filter: (path) => !/\/(node_modules|dist)$|\.tgz$/.test(path) })
cpSync(join(scratch, TARBALL), join(app, TARBALL))
timed('install', () => npm(['install', ...installLine, '--prefer-offline', '--no-audit', '--no-fund'], app))

const smtp = await startSmtpServer()
const [apiPort, webPort] = [await freePort(), await freePort()]
const API = `http://localhost:${apiPort}`
const WEB = `http://localhost:${webPort}`
timed('tsc + vite build', () => npm(['run', 'build'], app, { VITE_API_URL: API }))
const DIST = join(app, 'dist')
const browserRun = existsSync(CHROMIUM) ? await startBrowserRun() : undefined
t.comment(timings.join(', '))

t.test('the tarball holds the built contract and its manifest, nothing else', async (t) => {
  const paths = packed.files.map((f) => f.path)
  t.ok(paths.includes('package.json'))
  t.same(
    paths.filter((p) => p !== 'package.json' && p !== 'README.md' && !p.startsWith('dist/')),
    [],
    'no sources, tests or docs',
  )
  t.ok(paths.includes('dist/contract/index.js') && paths.includes('dist/contract/index.d.ts'))
  for (const entry of Object.values(manifest.exports) as { types: string; default: string }[]) {
    t.ok(paths.includes(entry.types.slice(2)) && paths.includes(entry.default.slice(2)), `${entry.default} is packed`)
  }
  t.notOk(
    paths.some((p) => /\/(routes|service|queries|tables)\.(js|d\.ts)$|^dist\/(plugins|cli)\//.test(p)),
    'no server module',
  )
  t.same(Object.keys(manifest.dependencies).sort(), ['@orpc/contract', 'zod'], 'it depends on what the schemas need')
})

t.test("the README's install line is the example's dependencies, exactly", async (t) => {
  t.ok(installLine.length > 3, installLine.join(' '))
  const pinned = Object.entries(example.dependencies as Record<string, string>).map(([name, version]) =>
    version.startsWith('file:') ? `./${version.slice('file:'.length)}` : `${name}@${version}`,
  )
  t.same([...installLine].sort(), pinned.sort())
  t.ok(installLine.includes(`./${TARBALL}`), 'the packed contract')
  const installed = JSON.parse(readFileSync(join(app, 'node_modules/insight-accounts-contract/package.json'), 'utf8'))
  t.equal(installed.version, manifest.version)
  // (kysely comes with better-auth itself.)
  for (const server of ['fastify', 'pg', 'pino', 'lucia', '@node-rs/argon2', '@electric-sql/pglite']) {
    t.notOk(existsSync(join(app, 'node_modules', server)), `no ${server} installed`)
  }
})

t.test("docs/front-end.md's snippets are the example's files", async (t) => {
  const snippets = [...frontEndDoc.matchAll(/```ts\n\/\/ (src\/[\w-]+\.ts)\n[\s\S]*?```/g)]
  t.same(
    snippets.map(([, name]) => name),
    ['src/auth-client.ts', 'src/api.ts'],
  )
  for (const [block, name] of snippets) {
    t.equal(block.slice('```ts\n'.length, -'```'.length), readFileSync(join(EXAMPLE, name!), 'utf8'), name!)
  }
})

t.test("the members' bundle holds no admin procedure; the runtime contract adds its share", async (t) => {
  const bundle = bundleText(DIST)
  t.match(bundle, 'journal', "the members' procedures are in it")
  t.notMatch(bundle, /listUsers|setPremiumPlus/, 'the admin ones are not')
  t.match(readFileSync(join(app, 'node_modules/insight-accounts-contract/dist/admin/contract.js'), 'utf8'), 'listUsers')
  // The same app built with the contract swapped for an empty router: what the runtime contract costs.
  const { build } = await import(pathToFileURL(join(app, 'node_modules/vite/dist/node/index.js')).href)
  const stub = join(scratch, 'empty-contract.js')
  writeFileSync(stub, 'export const contract = {}\n')
  const without = await build({
    root: app,
    logLevel: 'silent',
    define: { 'import.meta.env.VITE_API_URL': JSON.stringify(API) },
    resolve: { alias: { 'insight-accounts-contract': stub } },
    build: { write: false },
  })
  const withoutText = ([] as { output: { type: string; code?: string }[] }[])
    .concat(without)
    .flatMap((r) => r.output)
    .map((o) => (o.type === 'chunk' ? o.code : ''))
    .join('')
  const gzip = (text: string) => gzipSync(text).length
  const added = gzip(bundle) - gzip(withoutText)
  t.ok(added > 0, `the runtime contract adds ${(added / 1024).toFixed(1)} KB gzip to ${(gzip(bundle) / 1024).toFixed(1)} KB`)
})

t.test(
  'the example app on another origin: every way in, the signed-in page and sign-out',
  { skip: browserRun ? false : NO_CHROMIUM },
  async (t) => {
    const { api, browser } = browserRun!
    const page = await browser.newPage()
    const problems: string[] = []
    page.on('pageerror', (err) => problems.push(err.message))
    await addPlatformAuthenticator(page)
    // The app's own calls to the API (not the gateway page's, nor navigations).
    const calls: { path: string; headers: Record<string, string> }[] = []
    page.on('request', (request) => {
      const own = request.frame().url().startsWith(WEB) && !request.isNavigationRequest()
      if (own && request.url().startsWith(`${API}/api/v1/`)) {
        calls.push({ path: new URL(request.url()).pathname, headers: request.headers() })
      }
    })
    const email = uniqueEmail('web-example')
    const password = 'correct horse battery staple'
    const status = () => page.textContent('#status')
    /** Waits for `selector`; on a timeout, says what the page said. */
    const until = async (selector: string) => {
      try {
        await page.waitForSelector(selector, { timeout: 20_000 })
      } catch {
        throw new Error(`${selector} never came; the page says: ${await status()}`)
      }
    }
    /** Waits until the page says something that starts with `words`; what it says. */
    const says = async (words: string) => {
      try {
        await page.waitForFunction((w) => document.getElementById('status')?.textContent?.startsWith(w), words, {
          timeout: 20_000,
        })
      } catch {
        throw new Error(`the page never said "${words}"; it says: ${await status()}`)
      }
      return status()
    }
    const signedInAs = async () => {
      await until('#signed-in:not([hidden])')
      await page.waitForFunction(() => document.getElementById('who')?.textContent !== '')
      return { who: await page.textContent('#who'), role: await page.textContent('#role'), plan: await page.textContent('#plan') }
    }
    const signOut = async () => {
      await page.click('#sign-out')
      await until('#signed-out:not([hidden])')
    }
    const fill = async (form: string, values: Record<string, string>) => {
      for (const [name, value] of Object.entries(values)) await page.fill(`#${form} [name=${name}]`, value)
    }

    await page.goto(WEB)
    await until('#signed-out:not([hidden])')

    // A mailbox proof on an address with an unproven password takes the account back (the password
    // goes): the mailed ways in get an address of their own, which the code's sign-in creates.
    await t.test('sign-in with a mailed code: a new address gets an account', async (t) => {
      const mailbox = uniqueEmail('web-example-code')
      await fill('sign-in-code', { email: mailbox })
      await page.click('#sign-in-code [name=send]')
      const code = /\b(\d{6})\b/.exec((await smtp.inbox.next(mailbox)).text)![1]!
      await fill('sign-in-code', { code })
      await page.click('#sign-in-code button:not([name])')
      t.same(await signedInAs(), { who: mailbox, role: 'member', plan: 'free' })
      await signOut()
      t.equal(await page.textContent('#last-method'), 'Last time you signed in with: email-otp')

      await t.test('sign-in with a mailed link: its page, its button, back on the app', async (t) => {
        await fill('sign-in-link', { email: mailbox })
        await page.click('#sign-in-link button')
        const link = /https?:\/\/\S+/.exec((await smtp.inbox.next(mailbox)).text)![0]
        await page.goto(link)
        await Promise.all([page.waitForURL(`${WEB}/**`), page.click('#sign-in')])
        t.equal((await signedInAs()).who, mailbox)
        await signOut()
      })
    })

    await fill('sign-up', { name: 'Sari', email, password })
    await page.click('#sign-up button')
    t.same(await signedInAs(), { who: email, role: 'member', plan: 'free' }, 'signed up and in')

    await t.test('profile', async (t) => {
      await fill('profile', { name: 'Sari Example' })
      await page.click('#profile button')
      t.equal(await says('Saved'), 'Saved: Sari Example.')
      const row = await api.db.selectFrom('user').select('name').where('email', '=', email).executeTakeFirst()
      t.equal(row?.name, 'Sari Example')
    })

    await t.test('journal', async (t) => {
      await fill('journal', { content: 'A calm day.', mood: '4' })
      await page.click('#journal button')
      await until('#entries li')
      t.match(await page.textContent('#entries'), /A calm day\. \(mood 4\)/)
    })

    await t.test('a sandbox purchase: the gateway page and back', async (t) => {
      await Promise.all([page.waitForURL(`${API}/api/v1/payments/sandbox/**`), page.click('#buy-premium')])
      await Promise.all([page.waitForURL(`${WEB}/**`), page.click('#pay')])
      t.equal(await says('Payment'), 'Payment paid.')
      t.equal((await signedInAs()).plan, 'premium')
    })

    await t.test('a passkey and two-factor added; password with the second step, then the passkey', async (t) => {
      // Only a session that proved the address sets up a second factor: a code typed in it.
      await page.click('#add-passkey')
      t.match(await says('EMAIL_NOT_PROVEN'), /^EMAIL_NOT_PROVEN/, 'refused before the address is proven in this session')
      await page.click('#verify-address [name=send]')
      const code = /\b(\d{6})\b/.exec((await smtp.inbox.next(email)).text)![1]!
      await fill('verify-address', { code })
      await page.click('#verify-address button:not([name])')
      await says('Address verified.')
      await page.click('#add-passkey')
      await says('Passkey added.')
      await fill('enable-two-factor', { password })
      await page.click('#enable-two-factor button')
      await until('#confirm-two-factor:not([hidden])')
      const totp = URI.parse((await page.textContent('#totp-uri'))!) as TOTP
      await fill('confirm-two-factor', { code: totp.generate() })
      await page.click('#confirm-two-factor button')
      await says('Two-factor is on.')

      await signOut()
      await fill('sign-in-password', { email, password })
      await page.click('#sign-in-password button')
      await until('#two-factor:not([hidden])')
      t.equal(await page.isHidden('#signed-in'), true, 'not in before the second step')
      // The next time step: the step just used is refused as a replay.
      await fill('two-factor', { code: totp.generate({ timestamp: Date.now() + 30_000 }) })
      await page.click('#two-factor button')
      t.equal((await signedInAs()).who, email, 'in after it')

      await signOut()
      await page.click('#sign-in-passkey')
      t.equal((await signedInAs()).who, email, 'the passkey signs in, second step included')
      await signOut()
      t.equal(await page.textContent('#last-method'), 'Last time you signed in with: passkey')
    })

    t.ok(
      calls.some((call) => call.path.endsWith('/__batch__') && call.headers['x-orpc-batch']),
      'the reads made together went as one batch (BatchLinkPlugin)',
    )
    t.same(
      calls.filter((call) => call.headers['x-csrf-token'] === undefined).map((call) => call.path),
      [],
      `each of the ${calls.length} calls carried x-csrf-token (SimpleCsrfProtectionLinkPlugin)`,
    )
    t.same(problems, [], 'no script errors')
  },
)

/** The text of the built app's scripts. */
function bundleText(dist: string): string {
  const assets = join(dist, 'assets')
  return readdirSync(assets)
    .filter((f) => f.endsWith('.js'))
    .map((f) => readFileSync(join(assets, f), 'utf8'))
    .join('')
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
}

/** The API (mail to the loopback SMTP server), the built app served as a static site, and Chromium. */
async function startBrowserRun() {
  const api = await buildTestApp({ env: { AUTH_URL: API, WEB_ORIGIN: WEB, SMTP_URL: smtp.url } })
  await api.listen({ port: apiPort, host: 'localhost' })
  await serveOrigin(
    (req, res) => {
      const path = join(DIST, new URL(req.url ?? '/', WEB).pathname)
      const file = path.startsWith(DIST) && existsSync(path) && statSync(path).isFile() ? path : join(DIST, 'index.html')
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' })
      res.end(readFileSync(file))
    },
    { port: webPort },
  )
  const browser = await launchChromium()
  return { api, browser }
}
