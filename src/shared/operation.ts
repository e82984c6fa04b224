// How a business operation is declared, once: an oRPC 1.14 contract procedure. Its key in the
// contract router is the procedure name (RPC path /api/v1/<router>/<name>), `.route()` holds the
// REST twin (method, path under /api/v1, success status, OpenAPI words), `.meta()` the route policy
// and the error statuses it documents, `.input()` and `.output()` the zod schemas both protocols
// validate with. src/plugins/operations.ts makes the procedure, the REST route and the OpenAPI
// entry from it.
//
// Every domain's contract.ts declares its operations with it, inside
// `operation.tag(<the domain's OpenAPI tag>).router({ ... })` (oRPC puts the tag on each of
// them), and src/contract/ gathers them into what the web front end imports (the package
// insight-accounts-contract, packages/contract): here, below the domains, so that the gathering
// imports the domains and no domain imports it back. It and every
// module the contract reaches import nothing but zod, @orpc/contract and each other
// (test/contract/purity.test.ts walks the imports).
import { oc } from '@orpc/contract'
import { z } from 'zod'
import { ErrorSchema } from './errors.js'
import type { RoutePolicy } from './route-policy.js'

/** Statuses an operation may answer besides its success, its input's 400 and its policy's 401/403. */
export type DocumentedError = 402 | 403 | 404 | 409 | 413 | 502 | 503

export interface OperationMeta {
  /** Who may call and how (src/shared/route-policy.ts); none is the strict default: a session. */
  policy?: RoutePolicy
  /** Those statuses, each with the schema of its body (ErrorSchema, or one that details `data`). */
  errors?: { readonly [S in DocumentedError]?: z.ZodType }
  /** The largest request body in bytes, when the operation takes more than the service's default. */
  bodyLimit?: number
  /**
   * The REST answer is a file to save under this name (Content-Disposition: attachment). Never on
   * the procedure: oRPC's client reads an answer with that header as a file, not as its JSON.
   */
  download?: string
}

/** `meta.errors` for failures whose body is the one error shape (ErrorSchema), by status. */
export const failsWith = (...statuses: DocumentedError[]): OperationMeta['errors'] =>
  Object.fromEntries(statuses.map((status) => [status, ErrorSchema]))

/** The start of every declaration. */
export const operation = oc.$meta<OperationMeta>({})

/** The input of an operation that takes none: nothing, or an empty object; any key is refused. */
export const NoInput = z.strictObject({}).optional()
