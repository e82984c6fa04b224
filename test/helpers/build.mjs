// Run by `npm test` before tap: transpiles src/, db/, migrations/, test/ and bench/ into dist-test/
// with esbuild, one file to one file (no bundling), with source maps for coverage and stack traces.
// About a second for the whole tree, where tsc took ten: `npm run lint` type-checks instead (the
// project's isolatedModules and verbatimModuleSyntax make each file transpile alone the same way).
// Compiled files whose source is gone are removed first: a deleted or renamed test would otherwise
// still run from its old build.
import { existsSync, readdirSync, rmdirSync, rmSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..')
const OUT = join(ROOT, 'dist-test')
const SOURCE_DIRS = ['src', 'db', 'migrations', 'test', 'bench']

function* walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* walk(path)
    else yield path
  }
}

function removeEmptyDirs(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) removeEmptyDirs(join(dir, entry.name))
  }
  if (dir !== OUT && readdirSync(dir).length === 0) rmdirSync(dir)
}

const sources = SOURCE_DIRS.filter((d) => existsSync(join(ROOT, d)))
  .flatMap((d) => [...walk(join(ROOT, d))])
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.includes('/fixtures/'))

if (existsSync(OUT)) {
  const expected = new Set(sources.flatMap((f) => [`${f.slice(0, -3)}.js`, `${f.slice(0, -3)}.js.map`]))
  for (const file of walk(OUT)) {
    if (!expected.has(join(ROOT, relative(OUT, file)))) rmSync(file)
  }
  removeEmptyDirs(OUT)
}

await build({
  entryPoints: sources,
  outdir: OUT,
  outbase: ROOT,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  sourcesContent: false,
  logLevel: 'warning',
})
