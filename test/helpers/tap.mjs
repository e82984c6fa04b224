// Run by `npm test` after the build: runs tap on the compiled tests in dist-test/. Arguments name
// tests by their source, as before (`npm test -- test/journal test/auth/cli.test.ts`): each is
// mapped to its compiled file or folder; options pass through unchanged.
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..')
const OUT = join(ROOT, 'dist-test')
const tap = join(ROOT, 'node_modules/.bin/tap')

function run(argv) {
  const { status, signal } = spawnSync(tap, argv, { stdio: 'inherit' })
  if (signal) process.kill(process.pid, signal)
  return status ?? 1
}

// tap builds its Test class from the plugins package.json names (`tap.plugin`: no TypeScript
// loader, no module mocking). A fresh install holds the default build, and a run that finds it stale
// rebuilds it for the test files but still starts each of them with the default build's module
// loaders (the TypeScript and mock plugins'): every test process of that first run paid for them.
// So a stale build is rebuilt first, once per install.
const built = readFileSync(join(ROOT, 'node_modules/@tapjs/test/test-built/dist/esm/index.js'), 'utf8')
const { TapConfig } = await import('@tapjs/config')
if (/export const signature = `([^`]*)`/.exec(built)?.[1] !== (await TapConfig.load()).pluginSignature) {
  const status = run(['build'])
  if (status !== 0) process.exit(status)
}

const args = process.argv.slice(2).map((arg) => {
  if (arg.startsWith('-')) return arg
  const rel = relative(ROOT, resolve(arg))
  if (rel.startsWith('..') || rel.startsWith('dist-test') || !existsSync(join(ROOT, rel))) return arg
  return join(OUT, rel.replace(/\.ts$/, '.js'))
})

process.exit(run(args))
