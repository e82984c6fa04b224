// Responses go out through the route's zod response schema: a value that does not match is a bug
// (500), and keys the schema does not name are dropped, so a row never leaks a column by accident.
// fastify-type-provider-zod's compiler runs zod's `encode` direction, which is for codecs (we have
// none) and bypasses zod's compiled fast path: ten times the cost of `parse` on every response.
// For a schema without codecs or transforms the two give the same value.
import type { FastifySerializerCompiler } from 'fastify/types/schema.js'
import { $ZodType } from 'zod/v4/core'
import { responseSerializer } from '../shared/response-json.js'

export const serializerCompiler: FastifySerializerCompiler<unknown> = ({ schema: given, method, url }) => {
  const schema = given instanceof $ZodType ? given : (given as { properties?: unknown } | undefined)?.properties
  if (!(schema instanceof $ZodType)) throw new Error(`Route ${method} ${url}: response schemas must be zod schemas`)
  return responseSerializer(schema, method, url)
}
