// Development only (NODE_ENV=development): the mail the service sent, kept in this process's memory
// so a person, or an end-to-end test, opens its links and reads its codes at /api/dev/mail
// (src/dev/routes.ts) instead of digging them out of the log. Never made in production or test:
// a reset link or a sign-in code there belongs to its recipient alone.
import type { Clock } from '../shared/clock.js'

/** Where the inbox is served: its page and its JSON. */
export const DEV_MAIL_PATH = '/api/dev/mail'

/** The mails kept: the newest; an older one is dropped when a new one comes. */
export const DEV_MAIL_KEPT = 100

export interface KeptMail {
  /** A number as a string, counting up from 1 in this process. */
  id: string
  to: string
  subject: string
  text: string
  /** Every http(s) URL in the text, in its order. */
  links: string[]
  /** Every six-digit one-time code in the text (links/codes.ts), in its order. */
  codes: string[]
  sentAt: Date
}

// A URL ends where a mail's text would end it: white space, or a character no link of ours holds.
const LINK = /https?:\/\/[^\s<>"'`]+/g
const CODE = /(?<![\d])\d{6}(?![\d])/g

export class DevMailInbox {
  private readonly mails: KeptMail[] = []
  private count = 0

  constructor(
    private readonly clock: Clock,
    readonly capacity = DEV_MAIL_KEPT,
  ) {}

  /** A mail the mailer sends (plugins/mailer.ts's MailMessage: this module sits below it). */
  keep(message: { to: string; subject: string; text: string }): KeptMail {
    const { to, subject, text } = message
    // The codes are read from the text without its links: a token's digits are no code.
    const links = text.match(LINK) ?? []
    const codes = text.replace(LINK, ' ').match(CODE) ?? []
    const mail: KeptMail = { id: String(++this.count), to, subject, text, links, codes, sentAt: this.clock.now() }
    this.mails.push(mail)
    if (this.mails.length > this.capacity) this.mails.shift()
    return mail
  }

  /** Newest first; only those to `to` (any case) when given. */
  list(to?: string): KeptMail[] {
    const wanted = to?.toLowerCase()
    return this.mails.filter((m) => wanted === undefined || m.to.toLowerCase() === wanted).reverse()
  }

  find(id: string): KeptMail | undefined {
    return this.mails.find((m) => m.id === id)
  }
}
