// OpenAPI 3.1 generated from the zod route schemas, at /api/v1/openapi.json, and a reference page.
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod'
import { VERSION } from '../version.js'

export default fp(
  async function openapi(app: FastifyInstance, opts: { serverUrl: string }) {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Insight account, session and role service',
          version: VERSION,
          description:
            'Accounts, sessions, roles, profile, plan and usage, journal, compatibility results, payments, ' +
            'admin and consent. Errors always have the shape {code, status, message, data?}. ' +
            'Sessions travel in an HttpOnly cookie set by the /api/auth routes.',
        },
        servers: [{ url: opts.serverUrl }],
        components: {
          securitySchemes: {
            sessionCookie: { type: 'apiKey', in: 'cookie', name: 'better-auth.session_token' },
          },
        },
      },
      transform: jsonSchemaTransform,
      transformObject: jsonSchemaTransformObject,
    })
    await app.register(swaggerUi, { routePrefix: '/api/v1/docs', uiConfig: { deepLinking: true } })
    app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  },
  { name: 'openapi' },
)
