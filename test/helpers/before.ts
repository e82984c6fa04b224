// tap runs this once before the test files (package.json "tap.before").
import { writePgliteSnapshot } from './pglite-snapshot.js'

if (!process.env.DATABASE_URL) await writePgliteSnapshot()
