// A route's answer as JSON through its zod response schema, in zod's compiled `parse` direction
// (src/plugins/serializer.ts says why not `encode`). Used by every route's serializer and by the
// answers kept ready in memory (json-memo.ts, the liveness probe's).
import type { FastifyReply } from 'fastify'
import { ResponseSerializationError } from 'fastify-type-provider-zod'
import { type $ZodType, safeParse } from 'zod/v4/core'

/** A route's answer as JSON through its response schema: what every route's serializer runs. */
export function responseSerializer(schema: $ZodType, method: string, url: string): (data: unknown) => string {
  return (data) => {
    const result = safeParse(schema, data)
    if (!result.success) throw new ResponseSerializationError(method, url, { cause: result.error })
    return JSON.stringify(result.data)
  }
}

/** Sends JSON already serialized through the route's schema (a kept answer): Fastify sends a string as it is. */
export function sendSerialized<R extends FastifyReply>(reply: R, json: string): R {
  return reply.header('content-type', 'application/json; charset=utf-8').send(json) as R
}
