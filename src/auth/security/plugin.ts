// The security notices (notices.ts) and the known devices (devices.ts) as decorators: the services
// that record a change to the ways in, and the sign-in, reach them through `app`.
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { KnownDevices } from './devices.js'
import { SecurityNotices } from './notices.js'

declare module 'fastify' {
  interface FastifyInstance {
    securityNotices: SecurityNotices
    knownDevices: KnownDevices
  }
}

export default fp(
  async function securityNotices(app: FastifyInstance) {
    const notices = new SecurityNotices({ clock: app.clock, mailer: app.mailer, config: app.config.auth })
    app.decorate('securityNotices', notices)
    app.decorate('knownDevices', new KnownDevices({ db: app.db, clock: app.clock, notices }))
  },
  { name: 'security-notices', dependencies: ['mailer'] },
)
