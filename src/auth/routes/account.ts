// Self-service on the signed-in user's account under /api/auth/*, at parity with better-auth
// 1.6.34's core routes (same paths, bodies, answers and error codes), so its client's updateUser,
// changeEmail, deleteUser, listAccounts and unlinkAccount work unchanged; and its /ok and /error.
// The approval of a change of address by the current address has no session (the mail is read
// wherever its holder reads it): GET shows a page (a mail scanner that opens the link approves
// nothing), POST (its button) approves; both SIGN_IN_PER_IP, like every link page.
import type { FastifyReply } from 'fastify'
import { z } from 'zod'
import { UpdateProfileInput } from '../../profile/schemas.js'
import { contextOf } from '../../shared/context.js'
import { resolveOptionalRedirect, resolveRedirect, withQuery } from '../../shared/redirect.js'
import { ACTS_ON_GET, addsAWayIn, PUBLIC, REVERIFIES_PASSWORD } from '../../shared/route-policy.js'
import { currentUser } from '../../user/signed-in.js'
import { renderApprovalPage, renderDeadApprovalPage } from '../account/approval-page.js'
import { emailAuthDepsOf } from '../account/deps.js'
import {
  type AccountDeps,
  approveWithLink,
  assertMayChangeAddress,
  assertNewEmail,
  confirmDeletion,
  deleteUser,
  listAccounts,
  pendingApproval,
  requestEmailChange,
  unlinkAccount,
  updateUser,
} from '../account/service.js'
import { CallbackUrl, CurrentPassword, Email, EmailedToken, Status } from '../core/schemas.js'
import { APPROVE_ADDRESS_CHANGE_PATH, landAfterLink } from '../links/emailed-link.js'
import { linkButton, linkPage, pageOfLink } from './link-page.js'
import { declareRoutes, serveRoutes } from './serve.js'

const LinkedAccountSchema = z
  .object({
    id: z.string(),
    providerId: z.string().describe('"credential" for the password, "idp" for the identity provider'),
    accountId: z.string(),
    userId: z.string(),
    scopes: z.array(z.string()),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'LinkedAccount' })

const Deleted = z.object({ success: z.literal(true), message: z.enum(['User deleted', 'Verification email sent']) })

export const accountRoutes = declareRoutes({
  updateUser: {
    method: 'POST',
    path: '/api/auth/update-user',
    summary: 'Change the name or the image; email (400 EMAIL_CAN_NOT_BE_UPDATED), role, plan and unknown keys are refused',
    body: UpdateProfileInput.pick({ name: true, image: true }).extend({
      email: z.unknown().optional().describe('Refused: the address changes through change-email'),
    }),
    response: { 200: Status },
    errors: [400, 401],
  },
  changeEmail: {
    method: 'POST',
    path: '/api/auth/change-email',
    policy: addsAWayIn(REVERIFIES_PASSWORD),
    summary:
      'Change the address: needs a session signed in within a day or the password (403 SESSION_NOT_FRESH); a verified account approves from its current address (a page whose button approves), then the new address confirms (links valid 24 h); answers the same whether the new address is taken or not',
    body: z.strictObject({
      newEmail: Email,
      callbackURL: CallbackUrl.optional(),
      password: CurrentPassword.optional().describe(
        "The current password, needed when the session is older than a day (an addition to better-auth's body)",
      ),
    }),
    response: { 200: Status },
    errors: [400, 401, 403],
  },
  changeEmailApprovalPage: linkPage({
    path: APPROVE_ADDRESS_CHANGE_PATH,
    summary: `The current address's approval link of a change of address: an HTML page naming the new address; only its button (POST ${APPROVE_ADDRESS_CHANGE_PATH}) approves`,
  }),
  approveChangeEmail: linkButton({
    path: APPROVE_ADDRESS_CHANGE_PATH,
    summary:
      'Approve a change of address from the current address (its link, single-use, 24 h): the new address is then mailed its link; answers the same whether that address is taken or not',
    errors: [400],
  }),
  deleteUser: {
    method: 'POST',
    path: '/api/auth/delete-user',
    policy: REVERIFIES_PASSWORD,
    summary:
      'Delete the account: with the password at once; without a password, a confirmation link is mailed (valid 24 h, single use)',
    body: z.strictObject({
      password: CurrentPassword.optional(),
      callbackURL: CallbackUrl.optional(),
      token: EmailedToken.optional(),
    }),
    response: { 200: Deleted },
    errors: [400, 401, 403, 404],
  },
  deleteUserCallback: {
    method: 'GET',
    path: '/api/auth/delete-user/callback',
    policy: ACTS_ON_GET,
    summary: 'The mailed deletion link, opened where its owner is signed in; redirects to callbackURL when given',
    query: z.strictObject({ token: EmailedToken, callbackURL: CallbackUrl.optional() }),
    response: { 200: Deleted, 302: z.null() },
    errors: [401, 403, 404],
  },
  listUserAccounts: {
    method: 'GET',
    path: '/api/auth/list-accounts',
    summary: 'The ways into the account: "credential" (the password) and "idp"; never a hash or a token',
    response: { 200: z.array(LinkedAccountSchema) },
    errors: [401],
  },
  unlinkAccount: {
    method: 'POST',
    path: '/api/auth/unlink-account',
    summary: 'Remove one way in; never the last one (400 FAILED_TO_UNLINK_LAST_ACCOUNT)',
    body: z.strictObject({ providerId: z.string().min(1).max(64), accountId: z.string().min(1).max(256).optional() }),
    response: { 200: Status },
    errors: [400, 401],
  },
  ok: {
    method: 'GET',
    path: '/api/auth/ok',
    policy: PUBLIC,
    summary: 'The auth API answers',
    response: { 200: z.object({ ok: z.literal(true) }) },
  },
  error: {
    method: 'GET',
    path: '/api/auth/error',
    policy: PUBLIC,
    summary: "better-auth's error page: 302 to the web front end's error page with the same error and description",
    query: z.looseObject({ error: z.string().max(256).optional(), error_description: z.string().max(1024).optional() }),
    response: { 302: z.null() },
    errors: [400],
  },
})

export default serveRoutes(accountRoutes, (app) => {
  const deps: AccountDeps = emailAuthDepsOf(app)
  // A link's landing page defaults to the front end's home, as better-auth's "/" does.
  const landing = (url: string | undefined) => resolveRedirect(url ?? '/', app.redirectRules, 'callbackURL')
  /** A deletion done (with the password or the mailed link): the sessions went with the account, so does the cookie. */
  const userDeleted = (reply: FastifyReply) => {
    app.sessionCookie.clear(reply)
    return { success: true as const, message: 'User deleted' as const }
  }

  return {
    updateUser: async (request) => {
      await updateUser(deps, contextOf(request), currentUser(request), request.body)
      return { status: true as const }
    },
    changeEmail: async (request) => {
      const user = currentUser(request)
      const { newEmail, password } = request.body
      assertNewEmail(user, newEmail)
      await assertMayChangeAddress(deps, contextOf(request), user.id, request.session!, password)
      const callbackURL = landing(request.body.callbackURL)
      // The recipient's hourly mail budget, taken whether or not the address is free (no enumeration).
      if (!(await app.takeMailBudget(newEmail, request.ip))) {
        request.log.info('change-email mail skipped: hourly mail budget of the new address is spent')
        return { status: true as const }
      }
      const who = { id: user.id, email: user.email }
      const sessionId = request.session!.id
      app.afterReply(request, 'change of email request', () => requestEmailChange(deps, who, sessionId, newEmail, callbackURL))
      return { status: true as const }
    },
    changeEmailApprovalPage: pageOfLink({
      find: (token) => pendingApproval(deps, token),
      live: renderApprovalPage,
      dead: renderDeadApprovalPage,
    }),
    approveChangeEmail: async (request) => {
      await approveWithLink(deps, contextOf(request), request.body.token)
      return { status: true as const }
    },
    deleteUser: async (request, reply) => {
      const { password, token } = request.body
      const callbackURL = landing(request.body.callbackURL)
      const outcome = await deleteUser(deps, contextOf(request), currentUser(request), { password, token, callbackURL })
      if (outcome === 'mailed') return { success: true as const, message: 'Verification email sent' as const }
      return userDeleted(reply)
    },
    deleteUserCallback: async (request, reply) => {
      const callbackURL = resolveOptionalRedirect(request.query.callbackURL, app.redirectRules, 'callbackURL')
      return landAfterLink(reply, callbackURL, 'INVALID_TOKEN', async () => {
        await confirmDeletion(deps, contextOf(request), currentUser(request), request.query.token)
        return userDeleted(reply)
      })
    },
    listUserAccounts: async (request) => {
      const accounts = await listAccounts(deps, currentUser(request).id)
      return accounts.map((a) => ({
        id: a.id,
        providerId: a.providerId,
        accountId: a.accountId,
        userId: a.userId,
        // No provider scopes are kept.
        scopes: [],
        createdAt: a.createdAt.toISOString(),
        updatedAt: a.updatedAt.toISOString(),
      }))
    },
    unlinkAccount: async (request) => {
      await unlinkAccount(deps, contextOf(request), currentUser(request).id, request.body)
      return { status: true as const }
    },
    ok: async () => ({ ok: true as const }),
    error: async (request, reply) => {
      const { error, error_description: description } = request.query
      // better-auth's rule: a code outside this alphabet is shown as UNKNOWN.
      const code = error && /^['A-Za-z0-9_-]+$/.test(error) ? error : 'UNKNOWN'
      const query: Record<string, string> = { error: code }
      if (description) query.error_description = description
      return reply.redirect(withQuery(landing('/auth/error'), query), 302)
    },
  }
})
