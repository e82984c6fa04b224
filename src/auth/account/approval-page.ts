// The page a change of address's approval link opens (the mail to the account's current, proven
// address): opening it approves nothing, since mail scanners open every link; its button posts the token.
import { BUTTON_CSS, deadLinkPage, escapeHtml, type Page, tokenButtonPage } from '../../shared/html-page.js'
import { APPROVE_ADDRESS_CHANGE_PATH } from '../links/emailed-link.js'

const TITLE = 'Approve the change of your email address'

/** The page of a live link: fixed words and the new address (its owner's mail already showed it). */
export function renderApprovalPage(newEmail: string, token: string): Page {
  return tokenButtonPage(
    TITLE,
    `<h1>Change your email address?</h1>
<p>Press the button to approve moving your account to <strong id="new-email">${escapeHtml(newEmail)}</strong>. A link to confirm that address is then sent there; nothing changes until it is opened in a browser signed in to your account.</p>
<p>If you did not ask for this, close this page and change your password.</p>`,
    { id: 'approve', label: 'Approve' },
    {
      url: APPROVE_ADDRESS_CHANGE_PATH,
      token,
      onAnswer: `    message.textContent = res.ok
      ? 'Approved: a link to confirm the new address was sent there.'
      : 'This link is invalid, used or expired.'`,
    },
    BUTTON_CSS.act,
  )
}

/** The page of a link that is unknown, used, expired, or no longer the account's address. */
export const renderDeadApprovalPage = (): Page =>
  deadLinkPage(TITLE, 'Ask for the change again from your account settings.', BUTTON_CSS.act)
