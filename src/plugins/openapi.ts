// OpenAPI 3.1 generated from the zod route schemas, at /api/v1/openapi.json, and a reference page;
// both only when API_DOCS allows (off in production unless set), and never in a frame.
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod'
import { VERSION } from '../shared/version.js'
import type { RoutePolicy } from '../shared/route-policy.js'

const PUBLIC_DOCUMENT: RoutePolicy = { access: 'public', cacheable: true }

/** The docs in no frame of another page (clickjacking the reference page's "try it out"). */
function refuseFraming(_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, p: unknown) => void) {
  reply.header('x-frame-options', 'DENY')
  const csp = reply.getHeader('content-security-policy')
  reply.header(
    'content-security-policy',
    typeof csp === 'string' && csp ? `${csp}; frame-ancestors 'none'` : "frame-ancestors 'none'",
  )
  done(null, payload)
}

export default fp(
  async function openapi(app: FastifyInstance, opts: { serverUrl: string; serveDocs: boolean }) {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Insight account, session and role service',
          version: VERSION,
          description:
            'Accounts, sessions, roles, profile, plan and usage, journal, compatibility results, payments, ' +
            'admin and consent. Errors always have the shape {code, status, message, data?, defined: false} ' +
            "(oRPC 1.14's error JSON). " +
            'Sessions travel in an HttpOnly cookie set by the /api/auth routes. ' +
            'Every business operation is also an oRPC 1.14 procedure (RPCLink at /api/v1; the procedure named in ' +
            "each operation's x-rpc-procedure, at /api/v1/<router>/<name>), with the same input, policy and errors.",
        },
        servers: [{ url: opts.serverUrl }],
        components: {
          securitySchemes: {
            sessionCookie: { type: 'apiKey', in: 'cookie', name: 'better-auth.session_token' },
          },
        },
      },
      // Each operation states its route policy: who may call it, as OpenAPI `security`, and the
      // whole declaration as `x-route-policy` (the default filled in), read from the route itself.
      transform: (input) => {
        const out = jsonSchemaTransform(input)
        const policy: RoutePolicy = { access: 'session', ...input.route.config?.policy }
        const access = policy.access
        const who =
          access === 'public'
            ? 'Public.'
            : access === 'session'
              ? 'Needs a session.'
              : `Needs the role ${access!.roles.join(' or ')}.`
        const crossSite = policy.refusesCrossSite
          ? 'Refuses cross-site requests: an untrusted Origin, Sec-Fetch-Site: cross-site, or a cookie with neither an Origin nor a trusted Referer (403 CROSS_SITE_REQUEST).'
          : undefined
        const schema = out.schema as Record<string, unknown>
        return {
          ...out,
          schema: {
            ...schema,
            description: [who, crossSite, schema.description].filter(Boolean).join(' '),
            security: access === 'public' ? [] : [{ sessionCookie: [] }],
            'x-route-policy': policy,
          },
        }
      },
      transformObject: jsonSchemaTransformObject,
    })
    // The document is still built (app.swagger()) for whoever asks in-process; only serving it is optional.
    if (!opts.serveDocs) return
    // The reference page and its assets are registered by @fastify/swagger-ui, which knows nothing
    // of route policies: this scope gives each of its routes the public, cacheable policy.
    await app.register(async function docsPage(scope) {
      scope.addHook('onRoute', (route) => {
        route.config = { ...route.config, policy: PUBLIC_DOCUMENT }
      })
      scope.addHook('onSend', refuseFraming)
      await scope.register(swaggerUi, { routePrefix: '/api/v1/docs', uiConfig: { deepLinking: true } })
      scope.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger())
    })
  },
  { name: 'openapi' },
)
