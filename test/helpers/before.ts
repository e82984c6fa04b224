// tap runs this once before the test files (package.json "tap.before"): the migrated database every
// test file starts from, a PGlite snapshot or, on PostgreSQL, a template database.
import { writePgTemplate } from './pg-template.js'
import { writePgliteSnapshot } from './pglite-snapshot.js'

if (process.env.DATABASE_URL) await writePgTemplate(process.env.DATABASE_URL)
else await writePgliteSnapshot()
