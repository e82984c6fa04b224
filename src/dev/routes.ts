// The development mail inbox (mail-inbox.ts): registered by src/app.ts only when NODE_ENV is
// development, so production and test have no such routes at all (404). Public: whoever reaches a
// development server reads its mail, which is what it is for; such a server listens on 127.0.0.1
// unless HOST says otherwise. What a browser could still do is refused: a page of another site
// cannot read the JSON (no CORS for it) nor frame the page, and a request whose Host is neither
// AUTH_URL's host nor a loopback name (a site that rebinds its DNS name to 127.0.0.1) is refused.
// Left out of the OpenAPI document: it describes the service as deployed.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { ErrorSchema, forbidden, notFound } from '../shared/errors.js'
import { escapeHtml, htmlPage, sendPage } from '../shared/html-page.js'
import { PUBLIC } from '../shared/route-policy.js'
import { DEV_MAIL_PATH, type DevMailInbox, type KeptMail } from './mail-inbox.js'

const Mail = z.object({
  id: z.string(),
  to: z.string(),
  subject: z.string(),
  text: z.string(),
  links: z.array(z.string()),
  codes: z.array(z.string()),
  sentAt: z.date(),
})
const Query = z.strictObject({ to: z.string().max(254).optional() })

const LOOPBACK = ['localhost', '127.0.0.1', '[::1]', '::1']

const PAGE_CSS = `body { max-width: 48rem; }
article { border-top: 1px solid #ccc; padding: .5rem 0; }
pre { white-space: pre-wrap; word-break: break-all; background: #f6f6f6; padding: .5rem; }
.code { font-size: 1.4rem; letter-spacing: .2rem; }
small { color: #666; }`

function mailHtml(mail: KeptMail): string {
  const links = mail.links.map((l) => `<li><a href="${escapeHtml(l)}" rel="noreferrer noopener">${escapeHtml(l)}</a></li>`)
  const codes = mail.codes.map((c) => `<strong class="code">${escapeHtml(c)}</strong>`)
  return `<article>
<h2>${escapeHtml(mail.subject)}</h2>
<p><small>#${escapeHtml(mail.id)}, ${escapeHtml(mail.sentAt.toISOString())}, to</small> ${escapeHtml(mail.to)}</p>
${codes.length ? `<p>Code: ${codes.join(' ')}</p>` : ''}
${links.length ? `<ul>${links.join('')}</ul>` : ''}
<pre>${escapeHtml(mail.text)}</pre>
</article>`
}

const inboxPage = (mails: KeptMail[], kept: number) =>
  htmlPage(
    'Development mail',
    () => `<h1>Development mail</h1>
<p>The mail this server sent, newest first; it keeps the last ${kept}. Reload for new ones. Only in
development; the same as JSON from <code>${DEV_MAIL_PATH}</code> without <code>Accept: text/html</code>.</p>
${mails.length ? mails.map(mailHtml).join('\n') : '<p>No mail yet.</p>'}`,
    PAGE_CSS,
  )

export default async function devMailRoutes(fastify: FastifyInstance, opts: { inbox: DevMailInbox }) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()
  const { inbox } = opts
  const hosts = new Set([new URL(app.config.auth.baseUrl).hostname, ...LOOPBACK])
  // The Host header itself, never request.hostname: with a trusted proxy (TRUST_PROXY=loopback)
  // that is X-Forwarded-Host, which a rebound page, same-origin by then, sets as it likes.
  const hostOf = (request: FastifyRequest) => {
    const host = request.headers.host
    return host !== undefined && URL.canParse(`http://${host}`) ? new URL(`http://${host}`).hostname : undefined
  }
  const ownHost = (request: FastifyRequest) => {
    const host = hostOf(request)
    if (host === undefined || !hosts.has(host))
      throw forbidden(`The development inbox answers only at ${app.config.auth.baseUrl} (AUTH_URL) or a loopback address`)
  }

  app.get(
    DEV_MAIL_PATH,
    {
      config: { policy: PUBLIC },
      schema: {
        hide: true,
        querystring: Query,
        response: { 200: z.object({ mails: z.array(Mail) }), 400: ErrorSchema, 403: ErrorSchema },
      },
    },
    async (request, reply) => {
      ownHost(request)
      const mails = inbox.list(request.query.to)
      // A browser's address bar asks for HTML: the page. Anything else (fetch, curl) gets JSON.
      if (request.headers.accept?.includes('text/html')) return sendPage(reply, inboxPage(mails, inbox.capacity), 200)
      return { mails }
    },
  )

  app.get(
    `${DEV_MAIL_PATH}/:id`,
    {
      config: { policy: PUBLIC },
      schema: {
        hide: true,
        params: z.strictObject({ id: z.string().regex(/^[1-9]\d{0,15}$/, 'a mail number') }),
        response: { 200: Mail, 400: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema },
      },
    },
    async (request) => {
      ownHost(request)
      const mail = inbox.find(request.params.id)
      if (!mail) throw notFound('Mail')
      return mail
    },
  )
}
