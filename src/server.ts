// Reads the configuration, builds the app, listens, and shuts down gracefully.
import { ConfigError, loadConfig, readEnvironment, type Config } from './config.js'
import { holdDataDirLock } from '../db/data-dir-lock.js'
import { keptDevSecret } from './auth/session/dev-secret.js'
import { DEV_MAIL_PATH } from './dev/mail-inbox.js'

const warnings: string[] = []
let config: Config
try {
  config = loadConfig(readEnvironment(), (message) => warnings.push(message), { keptDevSecret })
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(`Configuration error: ${err.message}`)
    process.exit(1)
  }
  throw err
}

try {
  holdDataDirLock(config.database) // the embedded database must not be opened by a second process
} catch (err) {
  console.error(`Start-up failed: ${err instanceof Error ? err.message : String(err)}`)
  process.exit(1)
}
// Loaded once the configuration is known good: a bad variable is reported at once, not after
// the whole application has loaded.
const { buildApp } = await import('./app.js')
let app: Awaited<ReturnType<typeof buildApp>>
try {
  app = await buildApp(config)
} catch (err) {
  // Typically the database is unreachable for the start-up migration: one line, exit 1, and the
  // orchestrator (compose, systemd) retries.
  console.error(`Start-up failed: ${err instanceof Error ? err.message : String(err)}`)
  process.exit(1)
}
for (const message of warnings) app.log.warn(message)

let shuttingDown = false
async function shutdown(signal: string) {
  if (shuttingDown) return
  shuttingDown = true
  app.log.info({ signal }, 'shutting down: finishing in-flight requests')
  app.closing = true
  const force = setTimeout(() => {
    app.log.error('in-flight requests did not finish within 30 s, exiting')
    process.exit(1)
  }, 30_000)
  force.unref()
  try {
    await app.close() // stops accepting, waits for in-flight requests, closes the pool
    process.exit(0)
  } catch (err) {
    app.log.error({ err }, 'error during shutdown')
    process.exit(1)
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))

try {
  await app.listen({
    port: config.port,
    host: config.host,
    // The socket's address is not the one to open: the session cookie belongs to AUTH_URL's origin.
    listenTextResolver: (address) => `Listening on ${address}; browsers use ${config.auth.baseUrl}`,
  })
} catch (err) {
  app.log.error({ err }, 'could not start listening')
  await app.close()
  process.exit(1)
}
// What a person starting the service needs first: the address a browser must use (its cookie
// belongs to that origin), who may call, and where the reference is.
const { baseUrl, trustedOrigins } = config.auth
app.log.info(`Open the API as ${baseUrl} (AUTH_URL): the session cookie belongs to that address`)
app.log.info(
  `Trusted origins: ${trustedOrigins.join(', ')}; a web app on another origin is refused until it is added to AUTH_TRUSTED_ORIGIN (comma-separated)`,
)
app.log.info(`API reference: ${baseUrl}/api/v1/docs (OpenAPI: ${baseUrl}/api/v1/openapi.json)`)
if (app.mailer.inbox) app.log.info(`Development mail (sign-in codes and links): ${baseUrl}${DEV_MAIL_PATH}`)
