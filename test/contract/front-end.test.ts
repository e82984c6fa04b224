// The README's front-end quick start, run as written: its snippets are read out of README.md,
// type-checked against the shipped contract, bundled for the browser with esbuild and run in real
// headless Chromium from a page on a second origin. The page signs up with better-auth's client,
// then calls getProfile and journal.createEntry through RPCLink and reads back Dates. The bundle's
// inputs prove the contract brought no server code with it.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import t from 'tap'
import { buildTestApp, uniqueEmail } from '../helpers/app.js'
import { bundleForBrowser, CHROMIUM, launchChromium, pageWithScript, serveOrigin } from '../helpers/chromium.js'
import { ROOT } from '../helpers/paths.js'
import { freePort } from '../helpers/port.js'

const NO_CHROMIUM = `${CHROMIUM} is absent: install Debian's chromium (apt-get install -y chromium) to run the browser test`
const CONTRACT = join(ROOT, 'src/contract/index.ts')

/** The README's TypeScript blocks that open with their file name (`// src/api.ts`), by that name. */
function readmeSnippets(): Map<string, string> {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const files = new Map<string, string>()
  for (const [, body] of readme.matchAll(/```ts\n(\/\/ src\/[\w-]+\.ts\n[\s\S]*?)```/g)) {
    const name = /^\/\/ (src\/[\w-]+\.ts)/.exec(body!)![1]!
    files.set(name, body!)
  }
  return files
}

const snippets = readmeSnippets()

// The app around the snippets: what a page of the front end would do with them.
const MAIN = `
import { ORPCError } from '@orpc/client'
import { authClient } from './auth-client'
import { example } from './example'

const out = document.getElementById('out')!
const email = new URLSearchParams(location.search).get('email')!
example(email).then(
  async ({ profile, entry }) => {
    const session = await authClient.getSession()
    out.textContent = JSON.stringify({
      ok: true,
      email: profile.email,
      profileCreatedAtIsDate: profile.createdAt instanceof Date,
      entry: { content: entry.content, mood: entry.mood, createdAtIsDate: entry.createdAt instanceof Date },
      role: session.data?.user.role,
      plan: session.data?.user.plan,
    })
  },
  (err: unknown) => {
    out.textContent = JSON.stringify({ ok: false, error: err instanceof ORPCError ? err.code : String(err) })
  },
)
`

// Inside the checkout (git-ignored .tap/), so the snippets' packages resolve from its node_modules as an app's would.
mkdirSync(join(ROOT, '.tap'), { recursive: true })
const dir = mkdtempSync(join(ROOT, '.tap/front-end-'))
// At exit, not at the root test's teardown: tap may run that while this file still awaits below.
process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
mkdirSync(join(dir, 'src'))
for (const [name, body] of snippets) writeFileSync(join(dir, name), body)
writeFileSync(join(dir, 'src/main.ts'), MAIN)
// What Vite's types give a real app: import.meta.env.
writeFileSync(join(dir, 'src/env.d.ts'), 'interface ImportMeta { readonly env: { readonly VITE_API_URL: string } }\n')

// Everything the tests use is set up before the first test is defined: tap ends the file's root
// test once its queue is empty, even while this module still awaits.
const browserRun = existsSync(CHROMIUM) ? await startBrowserRun() : undefined

t.test('the quick start has its three snippets', async (t) => {
  t.same([...snippets.keys()].sort(), ['src/api.ts', 'src/auth-client.ts', 'src/example.ts'])
})

t.test('the snippets type-check against the shipped contract', async (t) => {
  const ts = (await import('typescript')).default
  const program = ts.createProgram(
    ['main.ts', 'env.d.ts'].map((f) => join(dir, 'src', f)),
    {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
      skipLibCheck: true,
      paths: { 'insight-accounts/contract': [CONTRACT] },
      typeRoots: [],
    },
  )
  const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
  t.same(problems, [], 'no type errors')
})

t.test('the bundle holds the contract and no server code', { skip: browserRun ? false : NO_CHROMIUM }, async (t) => {
  const inputs = Object.keys(browserRun!.inputs).map((p) => relative(ROOT, join(process.cwd(), p)))
  const ours = inputs.filter((p) => p.startsWith('src/'))
  t.ok(ours.includes('src/contract/index.ts'), 'the contract is in it')
  for (const p of ours) t.notMatch(p, /\/(routes|service|queries|tables)\.ts$|^src\/(plugins|app|server|config)/, p)
  const packages = new Set(inputs.flatMap((p) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(p)?.[1] ?? []))
  for (const server of ['fastify', 'kysely', 'pg', 'pino', 'lucia', 'arctic', '@node-rs/argon2', '@electric-sql/pglite']) {
    t.notOk(packages.has(server), `no ${server}`)
  }
  t.ok(packages.has('better-auth') && packages.has('@orpc/client') && packages.has('zod'))
})

t.test(
  'a page on another origin signs up, then calls getProfile and journal.createEntry through RPCLink',
  { skip: browserRun ? false : NO_CHROMIUM },
  async (t) => {
    const { app, browser, web } = browserRun!
    const page = await browser.newPage()
    const email = uniqueEmail('front-end')
    await page.goto(`${web}/?email=${encodeURIComponent(email)}`)
    await page.waitForFunction(() => document.getElementById('out')?.textContent !== 'pending', undefined, { timeout: 30_000 })
    const result = JSON.parse((await page.textContent('#out'))!)
    t.same(result, {
      ok: true,
      email,
      profileCreatedAtIsDate: true,
      entry: { content: 'A calm day.', mood: 4, createdAtIsDate: true },
      role: 'member',
      plan: 'free',
    })
    const stored = await app.db
      .selectFrom('journal_entry')
      .innerJoin('user', 'user.id', 'journal_entry.user_id')
      .select('content')
      .where('user.email', '=', email)
      .execute()
    t.same(stored, [{ content: 'A calm day.' }], 'the entry is stored for that user')
  },
)

/** The API and a web origin on localhost, the snippets bundled for the page, and Chromium. */
async function startBrowserRun() {
  const apiPort = await freePort()
  const webPort = await freePort()
  const API = `http://localhost:${apiPort}`
  const WEB = `http://localhost:${webPort}`
  const app = await buildTestApp({ env: { AUTH_URL: API, WEB_ORIGIN: WEB } })
  await app.listen({ port: apiPort, host: 'localhost' })

  const { script, inputs } = await bundleForBrowser({
    entryPoints: [join(dir, 'src/main.ts')],
    alias: { 'insight-accounts/contract': CONTRACT },
    define: { 'import.meta.env.VITE_API_URL': JSON.stringify(API) },
  })
  await serveOrigin(pageWithScript(script, '<pre id="out">pending</pre>'), { port: webPort })
  const browser = await launchChromium()
  return { app, browser, web: WEB, inputs }
}
