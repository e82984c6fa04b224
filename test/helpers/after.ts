// tap runs this once after the test files (package.json "tap.after"): drops the run's template
// database on PostgreSQL.
import { dropPgTemplate } from './pg-template.js'

await dropPgTemplate()
