// The few HTML pages the service serves itself: the pages emailed links open ("this wasn't me", a
// sign-in link; opening one changes nothing, since mail scanners open every link, only its button
// acts) and the sandbox gateway's confirm page. Fixed words and our own values only, a strict
// content security policy with a nonce per page, no framing, no referrer.
import { randomBytes } from 'node:crypto'
import type { FastifyReply } from 'fastify'

export interface Page {
  html: string
  csp: string
}

/** A page titled `title`; `body` gets the nonce its one inline script must carry; `css` adds to the common style. */
export function htmlPage(title: string, body: (nonce: string) => string, css = ''): Page {
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
button { font-size: 1rem; padding: .6rem 1.4rem; cursor: pointer; border: 0; border-radius: .25rem; }
${css}
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

/** Text for an HTML element's content or a quoted attribute. */
export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)

/** Data for a page's script, as JSON that cannot close the script element it sits in. */
export const pageData = (data: unknown) => JSON.stringify(data).replace(/</g, '\\u003c')

/**
 * The message line and script of a page whose button `buttonId` posts `{token}` as JSON to `url`
 * (the page's own origin). `onAnswer`: the page's code run with `res` (the fetch Response) and
 * `message` (the status line); a failed request re-enables the button and says so.
 */
const tokenButtonScript = (
  nonce: string,
  buttonId: string,
  url: string,
  token: string,
  onAnswer: string,
) => `<p id="message" role="status"></p>
<script type="application/json" id="data">${pageData({ url, token })}</script>
<script nonce="${nonce}">
const data = JSON.parse(document.getElementById('data').textContent)
document.getElementById('${buttonId}').addEventListener('click', async (event) => {
  event.target.disabled = true
  const message = document.getElementById('message')
  try {
    const res = await fetch(data.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: data.token }) })
${onAnswer}
  } catch {
    event.target.disabled = false
    message.textContent = 'The request could not be sent; please try again.'
  }
})
</script>`

/** A page's button colours (its `css`): blue for the act its link was sent for, red for securing an account. */
export const BUTTON_CSS = {
  act: 'button { background: #1d4ed8; color: #fff; }',
  alarm: 'button { background: #b42318; color: #fff; }',
} as const

/**
 * The page of a live emailed link: it asks before it acts. `intro` (HTML) says what the button does;
 * the button posts the token to `post.url`, and `post.onAnswer` is as in tokenButtonScript.
 */
export function tokenButtonPage(
  title: string,
  intro: string,
  button: { id: string; label: string },
  post: { url: string; token: string; onAnswer: string },
  css: string,
): Page {
  return htmlPage(
    title,
    (nonce) => `${intro}
<p><button id="${button.id}" type="button">${button.label}</button></p>
${tokenButtonScript(nonce, button.id, post.url, post.token, post.onAnswer)}`,
    css,
  )
}

/** The page of an emailed link that is unknown, used or expired; `advice` says what to do instead. */
export const deadLinkPage = (title: string, advice: string, css?: string): Page =>
  htmlPage(
    title,
    () => `<h1>This link no longer works</h1>
<p>It is invalid, was already used, or has expired. ${advice}</p>`,
    css,
  )

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
