// `npm run import -- <file.json> [--dry-run] [--strict] [--report <out.json>]`: loads an export of
// the previous system into the configured database. The format and the rules: docs/import.md.
import { readFile, writeFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { openDatabase, type DatabaseHandle } from '../../db/index.js'
import { migrateToLatest } from '../../db/migrate.js'
import { HashPool } from '../auth/password/hash-pool.js'
import { PasswordHasher } from '../auth/password/password.js'
import { type Config, ConfigError, loadConfig, readEnvironment } from '../config.js'
import { dataDirHolder, dataDirInUseMessage, holdDataDirLock } from '../../db/data-dir-lock.js'
import { ImportFileError } from '../import/parse.js'
import { progressOn } from '../import/progress.js'
import { summarise } from '../import/report.js'
import { DEFAULT_BATCH_SIZE, runImport } from '../import/service.js'

const USAGE = `Usage:
  npm run import -- <file.json> [--dry-run] [--strict] [--report <out.json>] [--batch-size <n>]

  --dry-run     check everything and report, write nothing
  --strict      write nothing at all if any row is rejected
  --report      write the full JSON report to this file (default: standard output)
  --batch-size  rows per transaction (default ${DEFAULT_BATCH_SIZE})

Exit status: 0 imported, 4 some rows rejected (listed in the report), 1 failed,
2 bad usage, 3 the embedded database is in use by a running server.`

const OPTIONS = {
  'dry-run': { type: 'boolean', default: false },
  strict: { type: 'boolean', default: false },
  report: { type: 'string' },
  'batch-size': { type: 'string' },
  help: { type: 'boolean', default: false },
} as const

const PARALLEL_BATCHES = 3

export const EXIT = { ok: 0, failed: 1, usage: 2, inUse: 3, rejected: 4 } as const

type Output = NodeJS.WritableStream & { isTTY?: boolean; columns?: number }

interface ImportIo {
  env?: Record<string, string | undefined>
  /** An open, migrated database (tests); without one the command opens the configured database. */
  database?: DatabaseHandle
  stdout?: Output
  stderr?: Output
  now?: () => Date
}

export async function main(argv: string[], io: ImportIo = {}): Promise<number> {
  const stdout = io.stdout ?? process.stdout
  const stderr = io.stderr ?? process.stderr
  const say = (out: Output, text: string) => out.write(`${text}\n`)

  let args: ReturnType<typeof parseArgs<{ args: string[]; allowPositionals: true; options: typeof OPTIONS }>>
  try {
    args = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS })
  } catch (err) {
    say(stderr, `${(err as Error).message}\n\n${USAGE}`)
    return EXIT.usage
  }
  if (args.values.help) {
    say(stdout, USAGE)
    return EXIT.ok
  }
  const batchSize = Number(args.values['batch-size'] ?? DEFAULT_BATCH_SIZE)
  if (args.positionals.length !== 1 || !Number.isInteger(batchSize) || batchSize < 1 || batchSize > 5000) {
    say(stderr, `Give exactly one export file${args.values['batch-size'] ? ' and a batch size of 1..5000' : ''}.\n\n${USAGE}`)
    return EXIT.usage
  }
  const file = args.positionals[0]!

  let config: Config
  try {
    config = loadConfig(io.env ?? readEnvironment()) // the server's warnings (AUTH_SECRET, AUTH_URL) do not concern us
  } catch (err) {
    if (err instanceof ConfigError) {
      say(stderr, `Configuration error: ${err.message}`)
      return EXIT.failed
    }
    throw err
  }

  let document: unknown
  try {
    document = JSON.parse(await readFile(file, 'utf8'))
  } catch (err) {
    say(stderr, `Cannot read ${file}: ${(err as Error).message}`)
    return EXIT.failed
  }

  let database = io.database
  if (!database) {
    if (!config.database.url) {
      const holder = dataDirHolder(config.database.pgliteDir)
      if (holder !== null) {
        say(stderr, dataDirInUseMessage(config.database.pgliteDir, holder))
        return EXIT.inUse
      }
      holdDataDirLock(config.database) // keeps a server from starting on the directory meanwhile
    }
    try {
      database = await openDatabase({ ...config.database, poolSize: PARALLEL_BATCHES + 1 })
      await migrateToLatest(database.db)
    } catch (err) {
      await database?.close()
      say(stderr, `Cannot open the database: ${(err as Error).message}`)
      return EXIT.failed
    }
  }

  // No queue limit: the import feeds the pool at most its capacity of passwords at a time itself.
  const hashPool = new HashPool(config.hashing.maxConcurrency, Number.POSITIVE_INFINITY)
  try {
    const hasher = new PasswordHasher(hashPool)
    const report = await runImport(database.db, hasher, document, {
      file,
      dryRun: args.values['dry-run'],
      strict: args.values.strict,
      batchSize,
      // PGlite is one connection: its batches run one after the other anyway.
      parallel: database.kind === 'postgres' ? PARALLEL_BATCHES : 1,
      now: io.now,
      progress: progressOn(stderr),
    })
    const text = `${JSON.stringify(report, null, 2)}\n`
    if (args.values.report) await writeFile(args.values.report, text)
    else stdout.write(text)
    say(stderr, summarise(report))
    if (report.error) return EXIT.failed
    return report.rejected.length > 0 ? EXIT.rejected : EXIT.ok
  } catch (err) {
    if (err instanceof ImportFileError) {
      say(stderr, `Cannot import ${file}: ${err.message}`)
      return EXIT.failed
    }
    throw err
  } finally {
    await hashPool.close()
    if (!io.database) await database.close()
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2))
}
