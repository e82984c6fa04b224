// Outgoing mail (password reset, email verification) over SMTP through nodemailer. Without
// SMTP_URL (development) each message, link included, is written to the log instead.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Transporter } from 'nodemailer'
import type { Config } from '../config.js'

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

  constructor(
    private readonly config: Config['mail'],
    private readonly log: FastifyBaseLogger,
    private readonly production: boolean,
  ) {}

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
    if (!this.config.smtpUrl) {
      // A production log must never hold a working reset link: there only the recipient is logged.
      if (this.production) {
        this.log.warn({ to: message.to, subject: message.subject }, 'SMTP_URL is not set: mail not sent')
      } else {
        this.log.info({ mail: { to: message.to, subject: message.subject, text: message.text } }, 'mail (SMTP_URL is not set)')
      }
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
    const mailer = new Mailer(app.config.mail, app.log, app.config.env === 'production')
    app.decorate('mailer', mailer)
    // Flushed and closed by the app's own close hook (src/app.ts), after the handlers and the
    // after-reply work that may still queue mail: this plugin's hook would run before them.
  },
  { name: 'mailer' },
)
