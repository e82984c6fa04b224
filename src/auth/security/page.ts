// The page a security notice's link opens: it says what the notice was about and asks before it
// acts. Opening it changes nothing (mail scanners open every link); its button posts the token.
import { BUTTON_CSS, deadLinkPage, type Page, tokenButtonPage } from '../../shared/html-page.js'
import { type NoticeData, noticeHappened, printedTime } from './notices.js'

export const SECURE_ACCOUNT_PATH = '/api/auth/secure-account'
const TITLE = 'Secure your account'

/** The confirmation page of a live link. Only fixed words and the notice's time are printed; the token travels as JSON data. */
export function renderConfirmPage(notice: NoticeData, token: string): Page {
  return tokenButtonPage(
    TITLE,
    `<h1>Was this not you?</h1>
<p id="notice">${noticeHappened(notice)} on ${printedTime(new Date(notice.at))}.</p>
<p>If it was not you, secure your account: every session of the account ends, linked sign-in providers are removed, every pending emailed link and remembered device stops working, and a new password must be chosen before the account can be signed in to again. A link to choose it is mailed to you.</p>`,
    { id: 'secure', label: 'Secure my account' },
    {
      url: SECURE_ACCOUNT_PATH,
      token,
      onAnswer: `    message.textContent = res.ok
      ? 'Your account is secured: every session has ended. Check your mailbox for the link to choose a new password.'
      : res.status === 409
        ? 'The address to put back now belongs to another account: nothing was changed. Please contact support.'
        : 'This link is invalid, used or expired.'`,
    },
    BUTTON_CSS.alarm,
  )
}

/** The page of a link that is unknown, used, expired, or no longer the account's. */
export const renderInvalidPage = (): Page =>
  deadLinkPage(TITLE, 'If you think someone else is using your account, reset your password.')
