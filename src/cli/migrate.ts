// `npm run migrate`: applies pending migrations to the configured database and exits.
// The server also migrates at start-up; this is for deploys that migrate before rolling out.
import { openDatabase } from '../../db/index.js'
import { migrateToLatest } from '../../db/migrate.js'
import { type Config, ConfigError, loadConfig, readEnvironment } from '../config.js'

async function main(): Promise<number> {
  let config: Config
  try {
    // Warnings about AUTH_SECRET / AUTH_URL concern the server, not a migration run.
    config = loadConfig(readEnvironment())
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`Configuration error: ${err.message}`)
      return 1
    }
    throw err
  }

  const target = config.database.url ? 'PostgreSQL (DATABASE_URL)' : `PGlite in ${config.database.pgliteDir}`
  const database = await openDatabase({ ...config.database, poolSize: 1 })
  try {
    const applied = await migrateToLatest(database.db)
    console.log(applied.length === 0 ? `${target}: already up to date` : `${target}: applied ${applied.join(', ')}`)
    return 0
  } catch (err) {
    console.error(`Migration failed on ${target}: ${err instanceof Error ? err.message : String(err)}`)
    return 1
  } finally {
    await database.close()
  }
}

process.exitCode = await main()
