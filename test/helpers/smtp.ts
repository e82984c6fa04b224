// A real SMTP server on loopback that keeps what it receives, for the mail tests.
import type { FastifyInstance } from 'fastify'
import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'
import t from 'tap'
import { buildTestApp, call, movableClock } from './app.js'

export interface ReceivedMail {
  to: string[]
  raw: string
  /** The decoded text body (quoted-printable undone). */
  text: string
  subject: string
}

function decodeQuotedPrintable(body: string): string {
  return Buffer.from(
    body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
    'latin1',
  ).toString('utf8')
}

function parse(raw: string, to: string[]): ReceivedMail {
  const split = raw.indexOf('\r\n\r\n')
  const headers = raw.slice(0, split)
  const body = raw.slice(split + 4)
  const qp = /content-transfer-encoding:\s*quoted-printable/i.test(headers)
  const subject = /^subject:\s*(.*)$/im.exec(headers)?.[1]?.trim() ?? ''
  return { to, raw, subject, text: qp ? decodeQuotedPrintable(body) : body }
}

export class Mailbox {
  readonly mails: ReceivedMail[] = []
  private waiters: Array<{ to: string; resolve: (m: ReceivedMail) => void }> = []

  deliver(mail: ReceivedMail): void {
    const waiter = this.waiters.find((w) => mail.to.includes(w.to))
    if (waiter) {
      this.waiters = this.waiters.filter((w) => w !== waiter)
      waiter.resolve(mail)
    } else {
      this.mails.push(mail)
    }
  }

  /** The next mail to `to` (one already received first); rejects after `timeoutMs`. */
  next(to: string, timeoutMs = 10_000): Promise<ReceivedMail> {
    const index = this.mails.findIndex((m) => m.to.includes(to))
    if (index !== -1) return Promise.resolve(this.mails.splice(index, 1)[0]!)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no mail to ${to} within ${timeoutMs} ms`)), timeoutMs)
      this.waiters.push({
        to,
        resolve: (m) => {
          clearTimeout(timer)
          resolve(m)
        },
      })
    })
  }

  /** Mails received for `to` and not yet taken. */
  for(to: string): ReceivedMail[] {
    return this.mails.filter((m) => m.to.includes(to))
  }
}

/**
 * What the server received. The security notices (src/auth/security/notices.ts: a mail on every
 * change to the ways in and on a sign-in from a new device) are kept apart in `notices`, so a test
 * that waits for the next mail to an address gets the mail its flow sends.
 */
export class Inbox extends Mailbox {
  readonly notices = new Mailbox()

  override deliver(mail: ReceivedMail): void {
    if (mail.subject.startsWith('Security notice:')) this.notices.deliver(mail)
    else super.deliver(mail)
  }
}

/** Starts the server; its URL goes into SMTP_URL. Closed when the test file ends. */
export async function startSmtpServer(): Promise<{ url: string; inbox: Inbox }> {
  const inbox = new Inbox()
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        inbox.deliver(
          parse(
            Buffer.concat(chunks).toString('utf8'),
            session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
          ),
        )
        callback()
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.server.address() as AddressInfo
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `smtp://127.0.0.1:${port}`, inbox }
}

/**
 * The app mailing through an SMTP server of its own, on a clock the tests move (movableClock),
 * listening on a free loopback port for better-auth's client and the mailed links.
 */
export async function mailingApp(env: Record<string, string> = {}) {
  const smtp = await startSmtpServer()
  const clock = movableClock()
  const app = await buildTestApp({ env: { SMTP_URL: smtp.url, ...env }, deps: { clock } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { smtp, clock, app }
}
/** The first http(s) link in a mail body. */
export function linkIn(mail: ReceivedMail): URL {
  const match = /https?:\/\/\S+/.exec(mail.text)
  if (!match) throw new Error(`no link in mail: ${mail.text}`)
  return new URL(match[0])
}

/**
 * What the holder of an account's current address does with the approval of a change of address:
 * the link opens a page, whose button posts its token (the page's own origin is the API's).
 */
export function pressApprove(app: FastifyInstance, mail: ReceivedMail) {
  const link = linkIn(mail)
  return app.inject({
    method: 'POST',
    url: link.pathname,
    headers: { origin: link.origin },
    payload: { token: link.searchParams.get('token') },
  })
}

/**
 * What the holder of a mailbox can do: ask a password reset for `email`, take the token from the
 * link mailed to `inbox` and set `newPassword` with it. The reset's answer.
 */
export async function resetThroughMailbox(app: FastifyInstance, inbox: Mailbox, email: string, newPassword: string) {
  await call(app, 'POST', '/api/auth/request-password-reset', { body: { email } })
  const token = linkIn(await inbox.next(email)).searchParams.get('token')!
  return call(app, 'POST', '/api/auth/reset-password', { body: { token, newPassword } })
}
