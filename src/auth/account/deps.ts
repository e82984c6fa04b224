// What the email flows (sign-up, sign-in, reset, verification, change of address) and the account's
// own flows need: one set, built once from the app's decorations (src/auth/plugin.ts).
import type { FastifyInstance } from 'fastify'
import type { DB } from '../../../db/index.js'
import type { Config } from '../../config.js'
import type { Mailer } from '../../plugins/mailer.js'
import type { Clock } from '../../shared/clock.js'
import type { PasswordHasher } from '../password/password.js'
import type { KnownDevices } from '../security/devices.js'
import type { SecurityNotices } from '../security/notices.js'

export interface EmailAuthDeps {
  db: DB
  clock: Clock
  hasher: PasswordHasher
  mailer: Mailer
  config: Config['auth']
  notices: SecurityNotices
  /** Forgotten when the password is reset or changed, but for the browser that did it. */
  devices: KnownDevices
}

export const emailAuthDepsOf = (app: FastifyInstance): EmailAuthDeps => ({
  db: app.db,
  clock: app.clock,
  hasher: app.hasher,
  mailer: app.mailer,
  config: app.config.auth,
  notices: app.securityNotices,
  devices: app.knownDevices,
})
