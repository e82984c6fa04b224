// `npm run import` as a separate process, on the database its environment names: a temporary
// embedded data directory, or a database of its own on the PostgreSQL server of DATABASE_URL.
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openDatabase } from '../../db/index.js'
import { LOCK_FILE } from '../../db/data-dir-lock.js'
import type { ImportReport } from '../../src/import/report.js'
import { migratedDatabaseEnv, usingPostgres } from '../helpers/db.js'
import { entryPoint, ROOT } from '../helpers/paths.js'

// Runs the command line several times: slow on a loaded 2-core machine, not a hang.
t.setTimeout(300_000)
const FIXTURE = join(ROOT, 'test/fixtures/import/previous-system.json')

const dir = mkdtempSync(join(tmpdir(), 'insight-import-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
// A migrated database: the import's own start-up runs the migrations, which find nothing to do.
const env = await migratedDatabaseEnv('import-data')
const dataDir = env.PGLITE_DIR ?? join(dir, 'data')

function runImport(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...entryPoint('src/cli/import.ts'), ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH!, NODE_ENV: 'test', ...env }, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

const readReport = (file: string): ImportReport => JSON.parse(readFileSync(file, 'utf8'))

/** 250 users with entries: with a batch size of 100 the run spans three batches. */
function generatedExport(): string {
  const password = JSON.parse(readFileSync(FIXTURE, 'utf8')).users[1].password
  const users = Array.from({ length: 250 }, (_, i) => ({
    id: `gen_${i}`,
    email: `Gen.${i}@Example.id`,
    name: `Gen ${i}`,
    role: 'user',
    createdAt: '2024-03-01T08:00:00Z',
    password,
  }))
  const journalEntries = users.map((u, i) => ({
    id: `gen_j_${i}`,
    userId: u.id,
    content: 'text',
    mood: 3,
    entryDate: '2024-05-01',
  }))
  const file = join(dir, 'generated.json')
  writeFileSync(file, JSON.stringify({ users, journalEntries }))
  return file
}

t.test('imports the export, writes the report file, prints plain progress lines when not on a terminal', async (t) => {
  const reportFile = join(dir, 'report.json')
  const run = await runImport([FIXTURE, '--report', reportFile])
  t.equal(run.code, 4, `exit 4: rows were rejected\n${run.stderr}`)
  t.equal(run.stdout, '', 'the report went to the file')
  t.match(run.stderr, /import: writing users: 10\/10 done/)
  t.match(run.stderr, /users: 16 rows, 10 created, 0 updated, 0 unchanged, 0 skipped, 6 rejected/)
  t.match(run.stderr, /rejected users\[10\] u_2001: email: invalid email/)
  const report = readReport(reportFile)
  t.equal(report.committed, true)
  t.equal(report.rejected.length, 16)
})

t.test('a second run reports everything unchanged and writes nothing', async (t) => {
  const run = await runImport([FIXTURE])
  t.equal(run.code, 4)
  const report: ImportReport = JSON.parse(run.stdout)
  t.match(report.counts.users, { created: 0, updated: 0, unchanged: 10 })
  t.match(report.counts.journalEntries, { created: 0, updated: 0, unchanged: 2 })
})

t.test('a file spanning several batches imports completely, then is unchanged', async (t) => {
  const file = generatedExport()
  const first = await runImport([file, '--batch-size', '100'])
  t.equal(first.code, 0, first.stderr)
  const report: ImportReport = JSON.parse(first.stdout)
  t.match(report.counts.users, { total: 250, created: 250, rejected: 0 })
  t.match(report.counts.journalEntries, { total: 250, created: 250, rejected: 0 })
  const second = await runImport([file, '--batch-size', '100', '--dry-run'])
  t.equal(second.code, 0)
  t.match(JSON.parse(second.stdout).counts.users, { unchanged: 250 })
})

t.test('the rows are in the database the server uses', async (t) => {
  const handle = await openDatabase({ url: env.DATABASE_URL, pgliteDir: dataDir, poolSize: 1 })
  t.teardown(() => handle.close())
  const users = await handle.db
    .selectFrom('user')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
  t.equal(users.n, 260)
  const events = await handle.db.selectFrom('audit_event').select('details').where('action', '=', 'import.completed').execute()
  t.equal(events.length, 3, 'one audit event per run that wrote (a dry run writes none)')
})

t.test(
  'refuses an embedded data directory held by a running server',
  { skip: usingPostgres() && 'PostgreSQL works while the server runs' },
  async (t) => {
    writeFileSync(join(dataDir, LOCK_FILE), JSON.stringify({ pid: process.pid, startedAt: new Date().toISOString() }))
    t.teardown(() => rmSync(join(dataDir, LOCK_FILE), { force: true }))
    const run = await runImport([FIXTURE])
    t.equal(run.code, 3)
    t.match(run.stderr, `in use by a running server or command (pid ${process.pid})`)
  },
)
