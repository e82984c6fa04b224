// Runs several test files one after another in one process, each as it would run alone.
//
// Every test process pays about 2 CPU s before its first assertion (Node and tap, importing the app,
// starting PGlite), and a pass on 2 cores is bound by CPU, not by waiting: a whole `npm test` runs
// the small files of a folder several to a process (test/helpers/tap.mjs writes the entry files that
// call this). A file is imported at the top level, as tap would run it: its tests start as it
// registers them. The next file is imported only when the last of them has ended and what the file
// registered with the root test's `teardown` (its apps, servers, databases) has been torn down.
// Each file still has a database of its own: on PostgreSQL a fresh copy of the template, on PGlite
// the process's one emptied (test/helpers/db.ts). What a file changes outside them (environment
// variables, root-level hooks) it must put back, as it would for the files after it in a test.
import t from 'tap'

type Teardown = () => unknown

let grouped = false
let fileTeardowns: Teardown[] | undefined
const betweenFiles: Teardown[] = []
const processTeardowns: Teardown[] = []

/** Whether this process runs several files (alone, a file's end is the process's). */
export const inGroup = (): boolean => grouped

/** In a group, runs `fn` when the process's last file has ended, whichever file asks. */
export const atProcessEnd = (fn: Teardown): void => {
  processTeardowns.push(fn)
}

/** Runs `fn` at the end of every file from now on, after the file's own teardowns. */
export const afterEachFile = (fn: Teardown): void => {
  betweenFiles.push(fn)
}

/** Runs `files`, named relative to the entry file `base` (its `import.meta.url`), in order. */
export async function runFiles(base: string, files: string[]): Promise<void> {
  grouped = true
  // The process's time limit is its files' (tap's per file, package.json's tap.timeout, or what a
  // file sets) summed.
  const perFile = Number(process.env.TAP_TIMEOUT ?? 30) * 1000
  const limit = t.setTimeout.bind(t)
  let next = 0
  limit(files.length * perFile)
  t.setTimeout = (ms: number) => limit(ms + (files.length - next) * perFile)
  // A file with nothing to run here (`t.plan(0, why)`, a service absent) says so as a skip: a plan of
  // 0 would end the process's other files too.
  const plan = t.plan.bind(t)
  t.plan = (count: number, why?: string) =>
    fileTeardowns && count === 0 ? t.skip(why ?? 'nothing to run here', () => {}) : plan(count, why)
  // A teardown is the file's. tap's own would also make the root test end itself once idle for a
  // few ticks, as it is while the next file loads; here it ends when the event loop is empty.
  t.teardown = (fn: Teardown) => {
    fileTeardowns?.push(fn)
  }
  for (const file of files) {
    next++
    const teardowns: Teardown[] = []
    fileTeardowns = teardowns
    // The source's name, as tap names a file that runs alone.
    const name = file.replace(/^(\.\.\/)+/, '').replace(/\.js$/, '.ts')
    t.comment(`file: ${name}`)
    try {
      await import(new URL(file, base).href)
    } catch (error) {
      t.fail(`${name} could not be loaded`, { error })
    }
    // Queued behind the file's own tests, so it starts when they have all ended.
    await t.test(`end of ${name}`, async (t) => {
      fileTeardowns = undefined
      for (const fn of [...teardowns.reverse(), ...betweenFiles]) await fn()
      t.pass('torn down')
    })
  }
  for (const fn of processTeardowns) await fn()
}
