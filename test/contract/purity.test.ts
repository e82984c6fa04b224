// The contract ships to the web front end (the package insight-accounts-contract, packages/contract,
// compiled from these entries): a web app that imports it must get types and zod schemas, never
// server code. Walked here from each entry, by every import and re-export, type-only ones included
// (a type import of a server module would make the front end's compiler resolve Fastify, Kysely or
// pg). The members' entry reaches no admin module: an app for members does not ship their schemas.
// test/contract/web-example.test.ts packs the package and checks what its tarball holds.
import { readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import t from 'tap'
import { ROOT } from '../helpers/paths.js'

const root = ROOT
const ENTRIES = ['src/contract/index.ts', 'src/contract/admin.ts'].map((entry) => join(root, entry))
const ALLOWED_PACKAGES = new Set(['zod', '@orpc/contract'])
const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|(?:^|\n)\s*import\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g

function importsOf(file: string): string[] {
  const source = readFileSync(file, 'utf8')
  return [...source.matchAll(IMPORT)].map((m) => (m[1] ?? m[2] ?? m[3])!)
}

/** The modules `entries` reach, and the packages they import (each with one module importing it). */
function walk(entries: string[]) {
  const reached = new Set<string>()
  const packages = new Map<string, string>()
  const queue = [...entries]
  while (queue.length > 0) {
    const file = queue.pop()!
    if (reached.has(file)) continue
    reached.add(file)
    for (const specifier of importsOf(file)) {
      if (specifier.startsWith('.')) queue.push(join(dirname(file), specifier.replace(/\.js$/, '.ts')))
      else packages.set(specifier, relative(root, file))
    }
  }
  return { reached, packages }
}

const { reached, packages } = walk(ENTRIES)

t.test('the contract reaches only zod, @orpc/contract and modules of its own kind', async (t) => {
  t.ok(reached.size >= 15, `${reached.size} modules walked`)
  for (const [name, by] of packages) t.ok(ALLOWED_PACKAGES.has(name), `${name} (imported by ${by})`)
  t.ok(packages.has('zod') && packages.has('@orpc/contract'), 'the walk saw the packages it allows')
  for (const file of reached) {
    const path = relative(root, file)
    t.ok(path.startsWith('src/') && !/\/(queries|service|routes|tables)\.ts$/.test(path), `${path} is not server code`)
  }
})

t.test("the members' entry reaches no admin module", async (t) => {
  const members = [...walk([ENTRIES[0]!]).reached].map((file) => relative(root, file))
  t.ok(members.includes('src/profile/contract.ts'), `${members.length} modules walked`)
  t.same(
    members.filter((path) => path.startsWith('src/admin/') || path === 'src/contract/admin.ts'),
    [],
  )
  t.ok(reached.has(join(root, 'src/admin/contract.ts')), 'the admin entry reaches them')
})

t.test('the walk would see a server import', async (t) => {
  t.same(
    importsOf(join(root, 'src/app.ts')).filter((s) => s === 'fastify'),
    ['fastify'],
  )
  t.ok(importsOf(join(root, 'src/profile/routes.ts')).includes('../user/signed-in.js'))
})
