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

// tap's process-info loader reads every module a test process loads, node_modules included, and
// sends each one's text to the main thread to count its lines, though coverage never looks at
// node_modules: told to skip them, every test process starts noticeably faster.
const env = { _TAPJS_PROCESSINFO_EXCLUDE_: String(/[\\/]node_modules[\\/]/), ...process.env }

const tap = join(ROOT, 'node_modules/.bin/tap')
const { status, signal } = spawnSync(tap, args, { stdio: 'inherit', env })
if (signal) process.kill(process.pid, signal)
process.exit(status ?? 1)
