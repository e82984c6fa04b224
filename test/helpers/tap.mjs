// Run by `npm test` after tsc: runs tap on the compiled tests in dist-test/. Arguments name tests by
// their source, as before (`npm test -- test/journal test/auth/cli.test.ts`): each is mapped to its
// compiled file or folder; options pass through unchanged.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..')
const OUT = join(ROOT, 'dist-test')

const args = process.argv.slice(2).map((arg) => {
  if (arg.startsWith('-')) return arg
  const rel = relative(ROOT, resolve(arg))
  if (rel.startsWith('..') || rel.startsWith('dist-test') || !existsSync(join(ROOT, rel))) return arg
  return join(OUT, rel.replace(/\.ts$/, '.js'))
})

const tap = join(ROOT, 'node_modules/.bin/tap')
const { status, signal } = spawnSync(tap, args, { stdio: 'inherit' })
if (signal) process.kill(process.pid, signal)
process.exit(status ?? 1)
