// The pages an emailed link opens ("this wasn't me", a sign-in link): opening one changes nothing,
// since mail scanners open every link; only its button acts, by posting the token. Fixed words and
// our own values only; a strict content security policy with a nonce per page.
import { randomBytes } from 'node:crypto'
import type { FastifyReply } from 'fastify'

export interface Page {
  html: string
  csp: string
}

/**
 * A page titled `title`; `body` gets the nonce its one inline script must carry. `accent`: the
 * colour of its button (red for an alarm, blue for a sign-in).
 */
export function htmlPage(title: string, body: (nonce: string) => string, accent = '#b42318'): Page {
  const nonce = randomBytes(16).toString('base64')
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
<style nonce="${nonce}">
body { font-family: system-ui, sans-serif; max-width: 32rem; margin: 4rem auto; padding: 0 1rem; color: #222; line-height: 1.5; }
button { font-size: 1rem; padding: .6rem 1.4rem; cursor: pointer; background: ${accent}; color: #fff; border: 0; border-radius: .25rem; }
</style>
</head>
<body>
${body(nonce)}
</body>
</html>
`
  const csp = `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`
  return { html, csp }
}

/** Data for a page's script, as JSON that cannot close the script element it sits in. */
export const pageData = (data: unknown) => JSON.stringify(data).replace(/</g, '\\u003c')

/** Sends a page: no framing, no referrer (the token is in the page's address), HTML as is. */
export const sendPage = (reply: FastifyReply, page: Page, status: number) =>
  reply
    .code(status)
    .header('content-security-policy', page.csp)
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .type('text/html; charset=utf-8')
    .serializer((payload: unknown) => String(payload)) // HTML as is, not a JSON string
    .send(page.html)
