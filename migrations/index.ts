// Every migration, in order. Listed explicitly so the same code runs from TypeScript and compiled JS.
import type { Migration } from 'kysely/migration'
import * as m0001 from './0001_foundation.js'

export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
}
