// The page a sign-in link opens: opening it signs nobody in and spends nothing (mail scanners open
// every link); its button posts the token, and the browser that pressed it is the one signed in.
import { htmlPage, pageData, type Page } from '../links/page.js'

export const MAGIC_LINK_VERIFY_PATH = '/api/auth/magic-link/verify'
const TITLE = 'Sign in'

/** The page of a live link. Fixed words only; the token travels as JSON data. */
export function renderSignInPage(token: string): Page {
  const data = pageData({ url: MAGIC_LINK_VERIFY_PATH, token })
  return htmlPage(
    TITLE,
    (nonce) => `<h1>Sign in</h1>
<p>Press the button to sign in on this device. The link works once, within five minutes of being sent.</p>
<p><button id="sign-in" type="button">Sign in</button></p>
<p id="message" role="status"></p>
<script type="application/json" id="data">${data}</script>
<script nonce="${nonce}">
const data = JSON.parse(document.getElementById('data').textContent)
document.getElementById('sign-in').addEventListener('click', async (event) => {
  event.target.disabled = true
  const message = document.getElementById('message')
  try {
    const res = await fetch(data.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: data.token }) })
    const answer = await res.json()
    if (res.ok && typeof answer.url === 'string') {
      message.textContent = 'Signed in.'
      location.assign(answer.url)
    } else {
      message.textContent = res.status === 403 ? 'This account cannot sign in.' : 'This link is invalid, used or expired.'
    }
  } catch {
    event.target.disabled = false
    message.textContent = 'The request could not be sent; please try again.'
  }
})
</script>`,
    '#1d4ed8',
  )
}

/** The page of a link that is unknown, used or expired. */
export function renderUsedLinkPage(): Page {
  return htmlPage(
    TITLE,
    () => `<h1>This link no longer works</h1>
<p>It is invalid, was already used, or has expired. Ask for a new sign-in link.</p>`,
    '#1d4ed8',
  )
}
