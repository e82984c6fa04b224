// The JSON of an answer built from a value that never changes, serialized once. The session cache
// (src/auth/session/cache.ts) hands every request of a session the same frozen user object, and
// replaces it, never edits it, when the row changes; so the answer built from it can be kept with
// it and dropped with it. Serializing through the response schema here, once, is what the route's
// serializer would otherwise do on every request.
import type { FastifyReply } from 'fastify'
import type { $ZodType } from 'zod/v4/core'
import { responseSerializer, sendSerialized } from './response-json.js'

export class JsonMemo<Source extends object> {
  private readonly bodies = new WeakMap<Source, { version: number; body: string }>()

  private readonly serialize: (data: unknown) => string

  /** `schema` is the route's 200 response schema; `method` and `url` name the route in errors. */
  constructor(schema: $ZodType, method: string, url: string) {
    this.serialize = responseSerializer(schema, method, url)
  }

  /**
   * Sends the JSON of `build()`, computed once per `source` and `version` (a number the answer
   * depends on beyond `source`, such as a renewed session's expiry).
   */
  send<R extends FastifyReply>(reply: R, source: Source, version: number, build: () => unknown): R {
    let kept = this.bodies.get(source)
    if (kept?.version !== version) {
      kept = { version, body: this.serialize(build()) }
      this.bodies.set(source, kept)
    }
    return sendSerialized(reply, kept.body)
  }
}
