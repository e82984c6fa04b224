// The page a security notice's link opens: it says what the notice was about and asks before it
// acts. Opening it changes nothing (mail scanners open every link); its button posts the token.
import { randomBytes } from 'node:crypto'
import { type NoticeData, noticeHappened, printedTime } from './notices.js'

export const SECURE_ACCOUNT_PATH = '/api/auth/secure-account'

export interface Page {
  html: string
  csp: string
}

const frame = (nonce: string, body: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>Secure your account</title>
<style nonce="${nonce}">
body { font-family: system-ui, sans-serif; max-width: 32rem; margin: 4rem auto; padding: 0 1rem; color: #222; line-height: 1.5; }
button { font-size: 1rem; padding: .6rem 1.4rem; cursor: pointer; background: #b42318; color: #fff; border: 0; border-radius: .25rem; }
</style>
</head>
<body>
${body}
</body>
</html>
`

const policy = (nonce: string) =>
  `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`

/** The confirmation page of a live link. Only fixed words and the notice's time are printed; the token travels as JSON data. */
export function renderConfirmPage(notice: NoticeData, token: string): Page {
  const nonce = randomBytes(16).toString('base64')
  const data = JSON.stringify({ url: SECURE_ACCOUNT_PATH, token }).replace(/</g, '\\u003c')
  const body = `<h1>Was this not you?</h1>
<p id="notice">${noticeHappened(notice.event)} on ${printedTime(new Date(notice.at))}.</p>
<p>If it was not you, secure your account: every session of the account ends, linked sign-in providers are removed, every pending emailed link and remembered device stops working, and a new password must be chosen before the account can be signed in to again. A link to choose it is mailed to you.</p>
<p><button id="secure" type="button">Secure my account</button></p>
<p id="message" role="status"></p>
<script type="application/json" id="data">${data}</script>
<script nonce="${nonce}">
const data = JSON.parse(document.getElementById('data').textContent)
document.getElementById('secure').addEventListener('click', async (event) => {
  event.target.disabled = true
  const message = document.getElementById('message')
  try {
    const res = await fetch(data.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: data.token }) })
    message.textContent = res.ok
      ? 'Your account is secured: every session has ended. Check your mailbox for the link to choose a new password.'
      : 'This link is invalid, used or expired.'
  } catch {
    event.target.disabled = false
    message.textContent = 'The request could not be sent; please try again.'
  }
})
</script>`
  return { html: frame(nonce, body), csp: policy(nonce) }
}

/** The page of a link that is unknown, used, expired, or no longer the account's. */
export function renderInvalidPage(): Page {
  const nonce = randomBytes(16).toString('base64')
  const body = `<h1>This link no longer works</h1>
<p>It is invalid, was already used, or has expired. If you think someone else is using your account, reset your password.</p>`
  return { html: frame(nonce, body), csp: policy(nonce) }
}
