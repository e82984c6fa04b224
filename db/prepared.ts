// Named prepared statements for the few queries that run on nearly every request.
//
// PostgreSQL parses and plans an unnamed statement again on every call. For the session lookup that
// was most of the database's CPU per request (docs/benchmarks.md has the figures). A statement declared here is prepared once per pooled connection under its name and
// executed by name from then on; every other query runs unnamed as before. The text is fixed SQL
// with $n parameters, so nothing about parameterisation changes. PGlite (one in-process
// connection) runs the same text unnamed.
//
// Behind PgBouncer in transaction mode, named statements need PgBouncer 1.21+ with
// max_prepared_statements set (docs/operations.md, "Scaling out").
import { CompiledQuery } from 'kysely'
import pg from 'pg'
import { writesWatchedTable } from './notifications.js'

/** SQL text -> statement name, and whether it writes a watched table. Filled at module load by `preparedStatement`. */
const names = new Map<string, { name: string; watched: boolean }>()

/**
 * Declares a statement that the pg driver prepares by `name`. Returns a function that makes the
 * Kysely query to run (`db.executeQuery(statement([a, b]))`, with `db` or a transaction).
 */
export function preparedStatement<Row>(name: string, text: string): (parameters: readonly unknown[]) => CompiledQuery<Row> {
  for (const [known, declared] of names) {
    if (declared.name === name && known !== text) throw new Error(`prepared statement "${name}" is declared twice`)
  }
  names.set(text, { name, watched: writesWatchedTable(text) })
  const template = CompiledQuery.raw(text) as CompiledQuery<Row>
  return (parameters) => ({ ...template, parameters })
}

/**
 * The pool's client (pool option `Client`): executes the declared statements by name, and remembers
 * a write to a table whose changes are announced (db/notifications.ts), so that the pool can tell
 * the listener when the connection goes back (db/index.ts).
 */
export class PreparingClient extends pg.Client {
  wroteWatchedTable = false

  // Kysely calls query(text, parameters); any other call shape passes through untouched.
  // (`any`: pg's query has a dozen overloads, and this forwards all of them.)
  // biome-ignore lint/suspicious/noExplicitAny: forwards every overload of pg's query unchanged
  override query(...args: any[]): any {
    if (args.length === 2 && typeof args[0] === 'string') {
      const declared = names.get(args[0])
      if (declared ? declared.watched : !this.wroteWatchedTable && writesWatchedTable(args[0])) this.wroteWatchedTable = true
      if (declared) return super.query({ name: declared.name, text: args[0], values: args[1] })
    }
    // biome-ignore lint/suspicious/noExplicitAny: as above
    return (super.query as (...a: any[]) => any)(...args)
  }
}
