// The import graph of src/ has no circle, neither between files, nor between the top-level folders
// (the domains), nor between the subfolders of any folder: a circle means two modules that cannot be
// read, tested or replaced one without the other. The user's home (src/user/) is the leaf every
// domain may import: it reaches only db/ and src/shared/. src/auth/ is built in layers, each
// importing only its own and the ones below (AUTH_LAYERS; docs/architecture.md, "The auth wing in
// layers"). Type-only imports count: a circle of types is still a circle to a reader.
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

/**
 * The graph of what lies directly in `dir` (`src/auth`): each subfolder is a node (`session`), each
 * loose file too (`plugin.ts`); an edge is an import from one to another. Imports leaving `dir` are
 * left out.
 */
function childGraph(files: Graph, dir: string): Graph {
  const childOf = (path: string) => (path.startsWith(`${dir}/`) ? path.slice(dir.length + 1).split('/')[0]! : null)
  const graph: Graph = new Map()
  for (const [from, targets] of files) {
    const child = childOf(from)
    if (child === null) continue
    const edges = graph.get(child) ?? new Set<string>()
    for (const to of targets) {
      const target = childOf(to)
      if (target !== null && target !== child) edges.add(target)
    }
    graph.set(child, edges)
  }
  return graph
}

/** Every folder of src/ (src/ itself included) that holds subfolders. */
function foldersWithSubfolders(dir: string): string[] {
  const subfolders = readdirSync(dir, { withFileTypes: true }).filter((entry) => entry.isDirectory())
  const below = subfolders.flatMap((entry) => foldersWithSubfolders(join(dir, entry.name)))
  return subfolders.length > 0 ? [relative(ROOT, dir), ...below] : below
}

interface Layer {
  name: string
  /** The subfolders (and loose files) of the folder that make this layer. */
  members: readonly string[]
}

/**
 * The layers of src/auth/, top first. A member may import the members of its own layer (no circle:
 * the test above) and of the layers below it, never one above: the ways in do not know the routes,
 * the sign-in step does not know the ways in, sessions do not know who signs in, the core knows
 * nothing of auth. A new folder of src/auth/ takes its place here.
 */
const AUTH_LAYERS: readonly Layer[] = [
  { name: 'the front door', members: ['plugin.ts'] },
  { name: 'routes', members: ['routes'] },
  { name: 'ways in', members: ['account', 'email', 'guests', 'idp', 'mailbox', 'passkey', 'phone', 'two-factor'] },
  { name: 'the sign-in step', members: ['sign-in'] },
  { name: 'sessions, cookies, emailed links and mail', members: ['session', 'links', 'security', 'password', 'tokens'] },
  { name: 'core', members: ['core'] },
]

/** What breaks the layer order: a member in no layer, and each import that goes up, as a sentence. */
function layerViolations(graph: Graph, dir: string, layers: readonly Layer[]): string[] {
  const levelOf = new Map(layers.flatMap((layer, level) => layer.members.map((member) => [member, level] as const)))
  const found: string[] = []
  for (const [from, targets] of graph) {
    const level = levelOf.get(from)
    if (level === undefined) {
      found.push(`${dir}/${from} is in no layer: give it its place in the layer list`)
      continue
    }
    for (const to of targets) {
      const target = levelOf.get(to)
      if (target !== undefined && target < level) {
        const below = layers.slice(level + 1).map((layer) => layer.name)
        found.push(
          `${dir}/${from} (${layers[level]!.name}) imports ${dir}/${to} (${layers[target]!.name}), a layer above it: ` +
            `it may import ${below.length > 0 ? `its own layer and ${below.join(', ')}` : 'only its own layer'}`,
        )
      }
    }
  }
  return found.sort()
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

t.test('no circle between the subfolders of any folder of src/', async (t) => {
  const folders = foldersWithSubfolders(SRC)
  t.ok(folders.includes('src/auth'), `folders with subfolders: ${folders.join(', ')}`)
  for (const dir of folders) t.same(circles(childGraph(files, dir)), [], `circles between the subfolders of ${dir}`)
})

t.test('src/auth/ imports only downward, layer by layer', async (t) => {
  const graph = childGraph(files, 'src/auth')
  t.ok(graph.size >= AUTH_LAYERS.length, `${graph.size} members of src/auth read`)
  for (const layer of AUTH_LAYERS) {
    for (const member of layer.members) t.ok(graph.has(member), `src/auth/${member} (${layer.name}) exists`)
  }
  t.same(layerViolations(graph, 'src/auth', AUTH_LAYERS), [], 'imports against the layer order')
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

t.test('the layer check names an upward import and a folder in no layer', async (t) => {
  const layers: Layer[] = [
    { name: 'top', members: ['a'] },
    { name: 'middle', members: ['b', 'c'] },
    { name: 'bottom', members: ['d'] },
  ]
  const graph: Graph = new Map([
    ['a', new Set(['b', 'd'])],
    ['b', new Set(['c'])],
    ['c', new Set(['d'])],
    ['d', new Set(['b'])],
    ['e', new Set()],
  ])
  t.same(layerViolations(graph, 'src/x', layers), [
    'src/x/d (bottom) imports src/x/b (middle), a layer above it: it may import only its own layer',
    'src/x/e is in no layer: give it its place in the layer list',
  ])
})
