// The "this wasn't me" link of a security notice: GET /api/auth/security-notice shows what the notice
// was about and asks (it changes nothing, so a mail scanner that opens the link does no harm), and
// POST /api/auth/secure-account, sent by that page's button or by the web front end, secures the account.
// No session: the link is opened wherever the mail is read. Both routes are SIGN_IN_PER_IP.
import { contextOf } from '../../shared/context.js'
import { emailAuthDepsOf } from '../account/deps.js'
import { findNotice, secureAccount } from '../account/secure.js'
import { sendPasswordResetMail } from '../email/service.js'
import { renderConfirmPage, renderInvalidPage, SECURE_ACCOUNT_PATH } from '../security/page.js'
import { linkButton, linkPage, pageOfLink } from './link-page.js'
import { declareRoutes, serveRoutes } from './serve.js'

export const securityRoutes = declareRoutes({
  securityNoticePage: linkPage({
    path: '/api/auth/security-notice',
    summary: `A security notice's "this wasn't me" link: an HTML page that says what happened and asks; only its button (POST ${SECURE_ACCOUNT_PATH}) acts`,
  }),
  secureAccount: linkButton({
    path: SECURE_ACCOUNT_PATH,
    summary:
      'Secure the account a security notice was mailed about (its token, single-use, 7 days): every session, provider link, pending link and trusted device ends, a password reset is required and its link mailed',
    errors: [400, 409],
  }),
})

export default serveRoutes(securityRoutes, (app) => {
  const deps = emailAuthDepsOf(app)
  return {
    securityNoticePage: pageOfLink({
      find: (token) => findNotice(deps, token),
      live: renderConfirmPage,
      dead: renderInvalidPage,
    }),
    secureAccount: async (request, reply) => {
      const user = await secureAccount(deps, contextOf(request), request.body.token)
      // The link to choose the new password, to the account's address (put back if the notice was of its change).
      await sendPasswordResetMail(deps, user)
      // This browser's session, if it was one of the account's, is gone with the others.
      if (request.user?.id === user.id) app.sessionCookie.clear(reply)
      return { status: true as const }
    },
  }
})
