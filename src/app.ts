// The application as a function of its configuration. src/server.ts only starts it.
import { randomBytes } from 'node:crypto'
import cookie from '@fastify/cookie'
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'
import { validatorCompiler } from 'fastify-type-provider-zod'
import type { DestinationStream } from 'pino'
import { openDatabase, type DatabaseHandle, type DB } from '../db/index.js'
import { migrateToLatest } from '../db/migrate.js'
import adminRoutes from './admin/routes.js'
import adminAuthRoutes from './admin/auth-routes.js'
import auth from './auth/plugin.js'
import mailer from './plugins/mailer.js'
import purge from './maintenance/purge.js'
import compatibilityRoutes from './compatibility/routes.js'
import paymentRoutes from './payment/routes.js'
import type { Config } from './config.js'
import { systemClock, type Clock } from './shared/clock.js'
import consentRoutes from './consent/routes.js'
import devMailRoutes from './dev/routes.js'
import personalDataRoutes from './personal-data/routes.js'
import healthRoutes from './health/routes.js'
import journalRoutes from './journal/routes.js'
import { loggerOptions, RequestLog, requestLogger } from './plugins/logging.js'
import { RunningHandlers } from './plugins/running-handlers.js'
import errorHandling, { clientError, frameworkError } from './plugins/errors.js'
import metrics from './plugins/metrics.js'
import { serializerCompiler } from './plugins/serializer.js'
import openapi from './plugins/openapi.js'
import rateLimits from './plugins/rate-limit.js'
import routePolicy from './plugins/route-policy.js'
import redisConnection from './plugins/redis.js'
import profileRoutes from './profile/routes.js'
import usageRoutes from './usage/routes.js'

export interface AppDeps {
  /** An open database; the caller owns it. Without one, the app opens (and closes) its own. */
  database?: DatabaseHandle
  /** Apply pending migrations when the app opens its own database (default true). */
  migrate?: boolean
  clock?: Clock
  /** Where log lines go (tests read them); stdout by default. */
  logStream?: DestinationStream
  /** Plain RPC calls served without oRPC's handler, the same bytes (default true; plugins/operations.ts). */
  rpcFastPath?: boolean
}

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
    database: DatabaseHandle
    db: DB
    clock: Clock
    /** True once shutdown began: new requests get 503. */
    closing: boolean
    /** Runs work after the reply is sent (running-handlers.ts); `settled()` waits for it and the mail it sends. */
    afterReply(request: FastifyRequest, what: string, task: () => Promise<unknown>): void
    settled(): Promise<void>
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/
// A request id names one request in the logs of every instance: a random prefix per process and a
// counter are unique as a UUID per request would be, without 122 fresh random bits each time.
const REQUEST_ID_PREFIX = randomBytes(6).toString('hex')
let requestCount = 0
const newRequestId = () => `${REQUEST_ID_PREFIX}-${(++requestCount).toString(36)}`

function originForm(target: string): string {
  if (target.startsWith('/')) return target
  try {
    const url = new URL(target)
    return `${url.pathname}${url.search}`
  } catch {
    return target // the router answers 404 or 400
  }
}

export async function buildApp(config: Config, deps: AppDeps = {}): Promise<FastifyInstance> {
  // Readable lines for a person at a terminal; JSON for everything else (log shippers, tests).
  const pretty = config.env === 'development' && process.stdout.isTTY === true
  const logger = deps.logStream
    ? { ...loggerOptions(config.logLevel), stream: deps.logStream }
    : loggerOptions(config.logLevel, { pretty })

  const requestLog = new RequestLog()
  const app = Fastify({
    logger,
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy,
    return503OnClosing: false,
    logController: requestLog,
    childLoggerFactory: requestLogger,
    genReqId: (req) => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : newRequestId()
    },
    routerOptions: { maxParamLength: 200 },
    frameworkErrors: frameworkError,
    clientErrorHandler: clientError,
    // An absolute-form request target ("GET http://host/path", RFC 9112 §3.2.2) is routed by its
    // path; the authority part is dropped so nothing downstream (a plugin's redirect) echoes it.
    rewriteUrl: (req) => originForm(req.url ?? '/'),
  })
  app.setValidatorCompiler(validatorCompiler)
  app.setSerializerCompiler(serializerCompiler)
  // JSON only: text/plain bodies are 415, not silently accepted.
  app.removeContentTypeParser(['text/plain'])

  const database =
    deps.database ??
    (await openDatabase({
      ...config.database,
      onPoolError: (err) => app.log.warn({ err: { message: err.message } }, 'database pool error'),
    }))
  if (!deps.database && deps.migrate !== false) await migrateToLatest(database.db)

  app.decorate('config', config)
  app.decorate('database', database)
  app.decorate('db', database.db)
  app.decorate('clock', deps.clock ?? systemClock)
  app.decorate('closing', false)
  app.decorate('rpcFastPath', deps.rpcFastPath ?? true)

  // Closing: handlers still running (their client may have gone) finish first, then what they use.
  const handlers = new RunningHandlers()
  app.addHook('onRoute', (route) => handlers.track(route))
  app.decorate('afterReply', (request: FastifyRequest, what: string, task: () => Promise<unknown>) =>
    handlers.afterReply(request.log, what, task),
  )
  app.decorate('settled', async () => {
    await handlers.drained()
    await app.mailer.flush()
  })
  app.addHook('onClose', async () => {
    // Handlers and after-reply work first, then the mail they queued, then what they used.
    await app.settled()
    await app.mailer.close()
    if (!deps.database) await database.close()
  })

  // A request that was in flight when shutdown began: its keep-alive connection must end with the
  // response, or server.close() waits for the client's idle timeout before the process can exit.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (app.closing) reply.header('connection', 'close')
    done(null, payload)
  })

  await app.register(errorHandling)
  await app.register(redisConnection, { url: config.redisUrl })
  await app.register(rateLimits)
  // Cookies are parsed when read (auth/session/cookie-attributes.ts), not on every request.
  await app.register(cookie, { secret: config.auth.secrets, hook: false })
  // request.user / request.session (declared in auth/session/request.ts), filled by the policy hook.
  app.decorateRequest('user', null)
  app.decorateRequest('session', null)
  await app.register(routePolicy, {
    trustedOrigins: config.auth.trustedOrigins,
    webOrigin: config.auth.webOrigin,
    roleRoutesNeedSecondFactor: config.auth.requireAdminTwoFactor,
    impersonationAllowsWrites: config.auth.impersonationAllowsWrites,
    closing: () => app.closing,
    // The session is auth's (auth/plugin.ts, registered below with the domains).
    loadSession: (request, reply) => app.loadSession(request, reply),
  })
  await app.register(mailer)
  await app.register(purge)
  await app.register(openapi, { serverUrl: config.auth.baseUrl, serveDocs: config.apiDocs })
  await app.register(metrics, { requestLog })

  await app.register(healthRoutes)
  await app.register(auth)
  await app.register(profileRoutes)
  await app.register(usageRoutes)
  await app.register(journalRoutes)
  await app.register(compatibilityRoutes)
  await app.register(paymentRoutes)
  await app.register(adminRoutes)
  await app.register(adminAuthRoutes)
  await app.register(consentRoutes)
  await app.register(personalDataRoutes)
  // Development only (NODE_ENV=development, `npm start`'s default): production and test have no such routes.
  if (app.mailer.inbox) await app.register(devMailRoutes, { inbox: app.mailer.inbox })

  return app
}
