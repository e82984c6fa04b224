// The page a sign-in link opens: opening it signs nobody in and spends nothing (mail scanners open
// every link); its button posts the token, and the browser that pressed it is the one signed in.
import { BUTTON_CSS, deadLinkPage, escapeHtml, type Page, tokenButtonPage } from '../../shared/html-page.js'

export const MAGIC_LINK_VERIFY_PATH = '/api/auth/magic-link/verify'
const TITLE = 'Sign in'

/**
 * The page of a live link: fixed words and the address it signs in to (whoever was sent someone
 * else's link sees whose account it is before pressing); the token travels as JSON data.
 */
export function renderSignInPage(token: string, email: string): Page {
  return tokenButtonPage(
    TITLE,
    `<h1>Sign in</h1>
<p>Press the button to sign in as <strong id="email">${escapeHtml(email)}</strong> on this device. The link works once, within five minutes of being sent.</p>`,
    { id: 'sign-in', label: 'Sign in' },
    {
      url: MAGIC_LINK_VERIFY_PATH,
      token,
      onAnswer: `    const answer = await res.json()
    if (res.ok && typeof answer.url === 'string') {
      message.textContent = 'Signed in.'
      location.assign(answer.url)
    } else {
      message.textContent = res.status === 403 ? 'This account cannot sign in.' : 'This link is invalid, used or expired.'
    }`,
    },
    BUTTON_CSS.act,
  )
}

/** The page of a link that is unknown, used or expired. */
export const renderUsedLinkPage = (): Page => deadLinkPage(TITLE, 'Ask for a new sign-in link.', BUTTON_CSS.act)
