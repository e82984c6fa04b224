// How a code reaches a phone: one small interface, one module per gateway (an SMS or a WhatsApp
// gateway is a class implementing it, chosen by PHONE_SENDER in src/config.ts). The only one here is
// the log sender, for development and tests: it writes the code to the app's log, which is why the
// configuration refuses it in production.
import type { FastifyBaseLogger } from 'fastify'

export interface PhoneSender {
  /** Sends `code` to `phoneNumber` (E.164). Called after the reply: a failure is logged, never answered. */
  send(phoneNumber: string, code: string): Promise<void>
}

/** PHONE_SENDER=log: the code in the log, at info, under `phoneCode` (never in production: src/config.ts). */
export class LogSender implements PhoneSender {
  constructor(private readonly log: FastifyBaseLogger) {}

  async send(phoneNumber: string, code: string): Promise<void> {
    this.log.info({ phoneCode: { phoneNumber, code } }, 'phone code (log sender)')
  }
}

export function phoneSender(name: 'log', log: FastifyBaseLogger): PhoneSender {
  switch (name) {
    case 'log':
      return new LogSender(log)
  }
}
