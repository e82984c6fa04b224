// The /api/auth routes as declarations, served the way src/plugins/operations.ts serves the
// contract: each route is declared once (method, path, the zod schemas of what it takes and
// answers, its policy, the statuses it fails with in the one error shape), keyed by its OpenAPI
// operationId, and implemented by a handler of its parsed request that calls one service. The
// declaration is the Fastify route's options: its schemas validate, serialize and make the OpenAPI
// entry; its policy is what the route-policy hook reads. better-auth's client is the wire, so the
// paths, bodies and answers are better-auth's, not ours to change.
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import type { z } from 'zod'
import type { Config } from '../../config.js'
import { ErrorSchema } from '../../shared/errors.js'
import type { MaybePromise } from '../../shared/maybe-async.js'
import type { RoutePolicy } from '../../shared/route-policy.js'

export interface AuthRoute {
  method: 'GET' | 'POST'
  path: string
  /** Its OpenAPI summary; a function of the config where it names a configured figure. */
  summary: string | ((config: Config) => string)
  /** The OpenAPI tags; ['auth'] unless said. */
  tags?: readonly string[]
  /** Who may call and how (src/shared/route-policy.ts); none is the strict default: a session. */
  policy?: RoutePolicy
  params?: z.ZodType
  query?: z.ZodType
  body?: z.ZodType
  /** The answers by status: the successes, and any failure whose body is not the one error shape. */
  response: { readonly [status: number]: z.ZodType }
  /** The statuses it fails with in the one error shape ({code, status, message}: better-auth's codes). */
  errors?: readonly number[]
}

type Parsed<S> = S extends z.ZodType ? z.output<S> : unknown

/** The request of a declared route: its body, query and params as its schemas parsed them. */
export type AuthRequest<D extends AuthRoute> = FastifyRequest<{
  Body: Parsed<D['body']>
  Querystring: Parsed<D['query']>
  Params: Parsed<D['params']>
}>

type Answer<D extends AuthRoute> = z.input<D['response'][keyof D['response']]>

/**
 * A declared route's handler: the answer (checked by its response schema), or the reply it sent (a
 * redirect, a page). A plain (not async) handler that sends the reply itself returns nothing.
 */
export type AuthHandler<D extends AuthRoute> = (
  request: AuthRequest<D>,
  reply: FastifyReply,
) => MaybePromise<Answer<D> | FastifyReply | undefined>

export type Handlers<R> = { [K in keyof R]: R[K] extends AuthRoute ? AuthHandler<R[K]> : never }

/** A family of routes, keyed by operationId, in the order they are registered (and listed in OpenAPI). */
export const declareRoutes = <const R extends Record<string, AuthRoute>>(routes: R): R => routes

const AUTH_TAGS = ['auth']

/** The Fastify route options of a declaration. */
export function routeOptions(
  operationId: string,
  route: AuthRoute,
  handler: AuthHandler<AuthRoute>,
  config: Config,
): RouteOptions {
  const errors = Object.fromEntries((route.errors ?? []).map((status) => [status, ErrorSchema]))
  return {
    method: route.method,
    url: route.path,
    ...(route.policy ? { config: { policy: route.policy } } : {}),
    schema: {
      operationId,
      tags: [...(route.tags ?? AUTH_TAGS)],
      summary: typeof route.summary === 'function' ? route.summary(config) : route.summary,
      ...(route.params ? { params: route.params } : {}),
      ...(route.query ? { querystring: route.query } : {}),
      ...(route.body ? { body: route.body } : {}),
      response: { ...route.response, ...errors },
    },
    handler: handler as RouteOptions['handler'],
  }
}

/** A family's plugin, which carries its declarations (the route walk and the tests read them). */
export type RouteFamily = ((app: FastifyInstance) => Promise<void>) & { declared: Readonly<Record<string, AuthRoute>> }

/**
 * The plugin that serves a family: `handlersOf` builds the handlers once, from the app (the
 * services' dependencies, cookies), and each declaration becomes one route with its handler.
 */
export function serveRoutes<R extends Record<string, AuthRoute>>(
  declared: R,
  handlersOf: (app: FastifyInstance) => Handlers<R>,
): RouteFamily {
  async function routes(app: FastifyInstance): Promise<void> {
    const handlers = handlersOf(app) as unknown as Record<string, AuthHandler<AuthRoute>>
    for (const [operationId, route] of Object.entries(declared)) {
      const handler = handlers[operationId]
      if (!handler) throw new Error(`No handler for the route ${operationId}`)
      app.route(routeOptions(operationId, route, handler, app.config))
    }
  }
  return Object.assign(routes, { declared })
}
