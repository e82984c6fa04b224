// Outgoing mail (password reset, email verification) over SMTP through nodemailer. Without
// SMTP_URL (development) each message, link included, is written to the log instead.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import nodemailer, { type Transporter } from 'nodemailer'
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
  private readonly transport: Transporter | undefined
  private readonly pending = new Set<Promise<void>>()

  constructor(
    private readonly config: Config['mail'],
    private readonly log: FastifyBaseLogger,
    private readonly production: boolean,
  ) {
    this.transport = config.smtpUrl ? nodemailer.createTransport(config.smtpUrl, { from: config.from }) : undefined
  }

  /** Sends now; rejects when the SMTP server refuses or cannot be reached. */
  async send(message: MailMessage): Promise<void> {
    if (!this.transport) {
      // A production log must never hold a working reset link: there only the recipient is logged.
      if (this.production) {
        this.log.warn({ to: message.to, subject: message.subject }, 'SMTP_URL is not set: mail not sent')
      } else {
        this.log.info({ mail: { to: message.to, subject: message.subject, text: message.text } }, 'mail (SMTP_URL is not set)')
      }
      return
    }
    await this.transport.sendMail({ from: this.config.from, to: message.to, subject: message.subject, text: message.text })
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

  close(): void {
    this.transport?.close()
  }
}

export default fp(
  async function mailer(app: FastifyInstance) {
    const mailer = new Mailer(app.config.mail, app.log, app.config.env === 'production')
    app.decorate('mailer', mailer)
    app.addHook('onClose', async () => {
      await mailer.flush()
      mailer.close()
    })
  },
  { name: 'mailer' },
)
