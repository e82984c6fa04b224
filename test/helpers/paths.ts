// Where things are, whether this file runs compiled (dist-test/test/helpers/paths.js, as `npm test`
// runs it) or from its source through a TypeScript loader. Tests that read the repository's files
// (README, sources, fixtures) find them from ROOT; a test that starts our server or command line as
// a child process runs the same build it runs itself.
import { existsSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = fileURLToPath(import.meta.url)

function findRoot(from: string): string {
  // dist-test/ holds no package.json: the first one up is the repository's.
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`)
  }
}

/** The repository root (with a trailing separator, like `new URL('../../', import.meta.url)` gave). */
export const ROOT = `${findRoot(dirname(here))}/`

/** True when the tests run as tsc's output in dist-test/. */
export const COMPILED = here.endsWith('.js')

/** The directory holding the compiled tree (src/, db/, test/ ...) that this run executes. */
export const BUILD = COMPILED ? join(ROOT, relative(ROOT, here).split('/')[0]!) : ROOT

/**
 * Node's arguments to run one of our TypeScript entry points (`src/server.ts`): its compiled copy
 * when the tests run compiled, else the source through tsx.
 */
export function entryPoint(source: string): string[] {
  return COMPILED ? [join(BUILD, source.replace(/\.ts$/, '.js'))] : ['--import', 'tsx', source]
}
