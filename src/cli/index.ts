// The command line: `npm run cli -- <command> ...` (or `node dist/src/cli/index.js <command> ...`).
import { ROLES, type Role } from '../shared/roles.js'
import { type Config, ConfigError, loadConfig, readEnvironment } from '../config.js'
import { dataDirHolder, dataDirInUseMessage, holdDataDirLock } from '../../db/data-dir-lock.js'

const USAGE = `Usage:
  npm run cli -- set-role <email> <member|admin|owner>

Reads DATABASE_URL (PostgreSQL; works while the server runs) or PGLITE_DIR (the embedded
database; the server must be stopped first) from the environment, like the server.`

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv
  if (command !== 'set-role' || args.length !== 2 || !ROLES.includes(args[1] as Role)) {
    console.error(command === 'help' || command === '--help' ? USAGE : `Unknown or incomplete command.\n\n${USAGE}`)
    return command === 'help' || command === '--help' ? 0 : 2
  }
  const [email, role] = args as [string, Role]

  let config: Config
  try {
    config = loadConfig(readEnvironment()) // the server's warnings (AUTH_SECRET, AUTH_URL) do not concern us
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`Configuration error: ${err.message}`)
      return 1
    }
    throw err
  }

  if (!config.database.url) {
    const holder = dataDirHolder(config.database.pgliteDir)
    if (holder !== null) {
      console.error(dataDirInUseMessage(config.database.pgliteDir, holder))
      return 3
    }
    holdDataDirLock(config.database) // keeps a server from starting on the directory meanwhile
  }

  // Loaded only now: usage and configuration errors answer without loading the database drivers.
  const [{ openDatabase }, { migrateToLatest }, { setRole }] = await Promise.all([
    import('../../db/index.js'),
    import('../../db/migrate.js'),
    import('./set-role.js'),
  ])
  const database = await openDatabase({ ...config.database, poolSize: 1 })
  try {
    await migrateToLatest(database.db) // a fresh data directory gets its tables, as at server start
    const result = await setRole(database.db, email, role)
    if (!result.ok) {
      console.error(`No account with the email ${email}. Sign up first, then run this command again.`)
      return 1
    }
    console.log(
      result.from === result.to
        ? `${email} already has the role ${role}.`
        : `${email} is now ${role} (was ${result.from})${result.sessionsRevoked ? `; ${result.sessionsRevoked} session(s) ended` : ''}.`,
    )
    return 0
  } finally {
    await database.close()
  }
}

process.exitCode = await main(process.argv.slice(2))
