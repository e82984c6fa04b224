// Run by `npm test` before tsc: removes compiled files from dist-test/ whose TypeScript source is
// gone (a deleted or renamed test would otherwise still run from its old build), and makes tsc emit
// everything again when an output it counts on is missing.
import { existsSync, readdirSync, rmdirSync, rmSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..')
const OUT = join(ROOT, 'dist-test')
const BUILD_INFO = join(OUT, '.tsbuildinfo')
const SOURCE_DIRS = ['src', 'db', 'migrations', 'test', 'bench']

function* walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* walk(path)
    else yield path
  }
}

/** The source a compiled file came from: x.js and x.js.map from x.ts, a copied x.json from itself. */
function sourceOf(file) {
  const rel = relative(OUT, file)
  return join(ROOT, /\.(js|js\.map|d\.ts)$/.test(rel) ? rel.replace(/\.(js|js\.map|d\.ts)$/, '.ts') : rel)
}

function removeEmptyDirs(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) removeEmptyDirs(join(dir, entry.name))
  }
  if (dir !== OUT && readdirSync(dir).length === 0) rmdirSync(dir)
}

if (existsSync(OUT)) {
  let pruned = 0
  for (const file of walk(OUT)) {
    if (file === BUILD_INFO) continue
    if (!existsSync(sourceOf(file))) {
      rmSync(file)
      pruned++
    }
  }
  removeEmptyDirs(OUT)
  if (pruned) console.log(`prune-build: removed ${pruned} compiled file(s) whose source is gone`)

  // tsc --incremental trusts its build info, not the outputs: a missing output means a full emit.
  const missing = SOURCE_DIRS.filter((d) => existsSync(join(ROOT, d)))
    .flatMap((d) => [...walk(join(ROOT, d))])
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.includes('/fixtures/'))
    .some((f) => !existsSync(join(OUT, relative(ROOT, f)).replace(/\.ts$/, '.js')))
  if (missing && existsSync(BUILD_INFO)) rmSync(BUILD_INFO)
}
