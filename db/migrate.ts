import type { Kysely } from 'kysely'
import { Migrator } from 'kysely/migration'
import { migrations } from '../migrations/index.js'

/** Applies every pending migration; Kysely holds an advisory lock so concurrent instances are safe. */
// biome-ignore lint/suspicious/noExplicitAny: migrations run on an untyped database, frozen in time
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error instanceof Error ? error : new Error(String(error))
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}
