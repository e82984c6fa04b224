// Outgoing mail (password reset, email verification) over SMTP through nodemailer. In development
// every message is also kept in the inbox at /api/dev/mail (src/dev/); without SMTP_URL the log
// names it and the recipient. In test, without SMTP_URL, the message, link included, is logged;
// in production only its recipient and subject.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Transporter } from 'nodemailer'
import type { Config } from '../config.js'
import { DEV_MAIL_PATH, DevMailInbox } from '../dev/mail-inbox.js'
import type { Clock } from '../shared/clock.js'

export interface MailMessage {
  to: string
  subject: string
  text: string
}

declare module 'fastify' {
  interface FastifyInstance {
    mailer: Mailer
  }
}

export class Mailer {
  /** Made by the first message: nodemailer is loaded then, not at start-up. */
  private transport: Promise<Transporter> | undefined
  private readonly pending = new Set<Promise<void>>()
  /** Development only: every message, for a person to open (src/dev/routes.ts serves it). */
  readonly inbox: DevMailInbox | undefined
  private readonly inboxUrl: string

  constructor(
    private readonly config: Config['mail'],
    private readonly log: FastifyBaseLogger,
    private readonly env: Config['env'],
    clock: Clock,
    baseUrl: string,
  ) {
    this.inbox = env === 'development' ? new DevMailInbox(clock) : undefined
    this.inboxUrl = `${baseUrl}${DEV_MAIL_PATH}`
  }

  /** The SMTP transport, made by the first message; a failed load is not kept, the next message tries again. */
  private transportFor(smtpUrl: string): Promise<Transporter> {
    this.transport ??= import('nodemailer')
      .then(({ default: nodemailer }) => nodemailer.createTransport(smtpUrl, { from: this.config.from }))
      .catch((err: unknown) => {
        this.transport = undefined
        throw err
      })
    return this.transport
  }

  /** Sends now; rejects when the SMTP server refuses or cannot be reached. */
  async send(message: MailMessage): Promise<void> {
    this.inbox?.keep(message)
    if (!this.config.smtpUrl) {
      const { to, subject } = message
      // A production log must never hold a working reset link: there only the recipient is logged.
      if (this.env === 'production') this.log.warn({ to, subject }, 'SMTP_URL is not set: mail not sent')
      else if (this.inbox) this.log.info({ mail: { to, subject } }, `mail kept in the development inbox: ${this.inboxUrl}`)
      else this.log.info({ mail: { to, subject, text: message.text } }, 'mail (SMTP_URL is not set)')
      return
    }
    const transport = await this.transportFor(this.config.smtpUrl)
    await transport.sendMail({ from: this.config.from, to: message.to, subject: message.subject, text: message.text })
  }

  /**
   * Sends without making the request wait: an answer that took an SMTP round trip only for known
   * addresses would reveal which emails have accounts. Failures are logged, never thrown.
   */
  sendInBackground(message: MailMessage): void {
    const sending = this.send(message)
      .catch((err: Error) =>
        this.log.error({ err: { message: err.message }, subject: message.subject }, 'mail could not be sent'),
      )
      .finally(() => this.pending.delete(sending))
    this.pending.add(sending)
  }

  /** Resolves once every background send has finished (shutdown, tests). */
  async flush(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending])
  }

  async close(): Promise<void> {
    const transport = await this.transport?.catch(() => undefined)
    transport?.close()
  }
}

export default fp(
  async function mailer(app: FastifyInstance) {
    const mailer = new Mailer(app.config.mail, app.log, app.config.env, app.clock, app.config.auth.baseUrl)
    app.decorate('mailer', mailer)
    // Flushed and closed by the app's own close hook (src/app.ts), after the handlers and the
    // after-reply work that may still queue mail: this plugin's hook would run before them.
  },
  { name: 'mailer' },
)
