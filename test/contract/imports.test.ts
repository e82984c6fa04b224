// The import graph of src/ has no circle, neither between files nor between the top-level folders
// (the domains): a circle means two modules that cannot be read, tested or replaced one without
// the other. The user's home (src/user/) is the leaf every domain may import: it reaches only
// db/ and src/shared/. Type-only imports count: a circle of types is still a circle to a reader.
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import t from 'tap'
import ts from 'typescript'
import { ROOT } from '../helpers/paths.js'

const SRC = join(ROOT, 'src')

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourcesUnder(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

/** The repository-relative paths a file imports or re-exports (`import type` and `import()` included). */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true)
  return importedFiles
    .map((i) => i.fileName)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => relative(ROOT, join(dirname(file), specifier.replace(/\.js$/, '.ts'))))
}

type Graph = Map<string, Set<string>>

/** Every file of src/ and the files of src/ it imports (edges leaving src/, to db/ or packages, are left out). */
function fileGraph(): Graph {
  const graph: Graph = new Map()
  for (const file of sourcesUnder(SRC)) {
    graph.set(relative(ROOT, file), new Set(importsOf(file).filter((path) => path.startsWith('src/'))))
  }
  return graph
}

/** A top-level folder of src/ (`src/auth/session/sessions.ts` -> `auth`); a loose file is its own node. */
const folderOf = (path: string) => path.split('/')[1]!.replace(/\.ts$/, '')

function folderGraph(files: Graph): Graph {
  const graph: Graph = new Map()
  for (const [from, targets] of files) {
    const edges = graph.get(folderOf(from)) ?? new Set<string>()
    for (const to of targets) if (folderOf(to) !== folderOf(from)) edges.add(folderOf(to))
    graph.set(folderOf(from), edges)
  }
  return graph
}

/** The circles of a graph: its strongly connected components of more than one node (Tarjan), each sorted. */
function circles(graph: Graph): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const visit = (node: string) => {
    index.set(node, index.size)
    low.set(node, index.get(node)!)
    stack.push(node)
    onStack.add(node)
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next)
        low.set(node, Math.min(low.get(node)!, low.get(next)!))
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!))
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== node)
      const selfLoop = graph.get(node)?.has(node) ?? false
      if (component.length > 1 || selfLoop) found.push(component.sort())
    }
  }
  for (const node of graph.keys()) if (!index.has(node)) visit(node)
  return found
}

const files = fileGraph()

t.test('no circle between the files of src/', async (t) => {
  t.ok(files.size >= 150, `${files.size} files read`)
  t.ok([...files.values()].reduce((n, edges) => n + edges.size, 0) >= 500, 'their imports were read')
  t.same(circles(files), [], 'circles of files')
})

t.test('no circle between the folders of src/', async (t) => {
  const folders = folderGraph(files)
  t.ok(folders.has('auth') && folders.has('user') && folders.has('profile'), 'the folders were read')
  t.same(circles(folders), [], 'circles of folders')
})

t.test("the user's home imports only db/ and src/shared/", async (t) => {
  const userFiles = sourcesUnder(join(SRC, 'user'))
  t.ok(userFiles.length >= 2, `${userFiles.length} files in src/user/`)
  for (const file of userFiles) {
    for (const path of importsOf(file)) {
      t.ok(/^(db|src\/shared|src\/user)\//.test(path), `${relative(ROOT, file)} imports ${path}`)
    }
  }
})

t.test('the checker sees a circle', async (t) => {
  const graph: Graph = new Map([
    ['a', new Set(['b'])],
    ['b', new Set(['c'])],
    ['c', new Set(['a', 'd'])],
    ['d', new Set()],
    ['e', new Set(['e'])],
  ])
  t.same(circles(graph), [['a', 'b', 'c'], ['e']])
})
