// Run by `npm test` after the build: runs tap on the compiled tests in dist-test/. Arguments name
// tests by their source, as before (`npm test -- test/journal test/auth/cli.test.ts`): each is
// mapped to its compiled file or folder; options pass through unchanged.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, relative, resolve } from 'node:path'
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

// A whole run (no test named) runs the small files of a folder several to a process
// (test/helpers/group.ts): each process costs about 2 CPU s before its first test, and a pass on two
// cores is bound by CPU. A file that sets its own time limit (`t.setTimeout` at its top level) is a
// long one: it keeps a process of its own, and the longest start first, then the largest groups
// (tap runs its files in the order of their names, hence the entries' numbers), so that the
// processes at a time end together.
const GROUP_SIZE = 12
const GROUPS = join(OUT, 'groups')

function* testFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (entry.name !== 'helpers' && entry.name !== 'fixtures') yield* testFiles(path)
    } else if (entry.name.endsWith('.test.js')) yield path
  }
}

/** The entry files of a whole run, in the order they should start. */
function entries() {
  const alone = []
  const byFolder = new Map()
  for (const file of testFiles(join(OUT, 'test'))) {
    const limit = /^t\.setTimeout\(([\d_.e]+)\)/m.exec(readFileSync(file, 'utf8'))?.[1]
    if (limit) alone.push({ files: [file], limit: Number(limit.replaceAll('_', '')) })
    else byFolder.set(dirname(file), [...(byFolder.get(dirname(file)) ?? []), file])
  }
  // A folder's files a group at a time; the few left over in each folder, together.
  const chunks = (files) =>
    Array.from({ length: Math.ceil(files.length / GROUP_SIZE) }, (_, i) => files.slice(i * GROUP_SIZE, (i + 1) * GROUP_SIZE))
  const folders = [...byFolder.values()].flatMap(chunks)
  const groups = [...folders.filter((files) => files.length > 2), ...chunks(folders.filter((files) => files.length <= 2).flat())]
    .sort((a, b) => b.length - a.length)
    .map((files) => ({ files }))
  alone.sort((a, b) => b.limit - a.limit)
  mkdirSync(GROUPS, { recursive: true })
  return [...alone, ...groups].map(({ files }, i) => {
    const folders = new Set(files.map((f) => relative(join(OUT, 'test'), dirname(f)).replaceAll('/', '-') || 'top'))
    const label = files.length === 1 ? basename(files[0], '.test.js') : folders.size === 1 ? [...folders][0] : 'others'
    const entry = join(GROUPS, `${String(i + 1).padStart(2, '0')}-${label}.test.js`)
    const imports = files.map((f) => JSON.stringify(`../${relative(OUT, f)}`)).join(',\n  ')
    writeFileSync(
      entry,
      `import { runFiles } from '../test/helpers/group.js'\n\nawait runFiles(import.meta.url, [\n  ${imports},\n])\n`,
    )
    return relative(ROOT, entry)
  })
}

const named = args.some((arg) => !arg.startsWith('-'))
process.exit(run(named ? args : [...args, ...entries()]))
