// The identity provider's callback as a service: the checks of the flow (state, issuer, the
// provider's error, the code exchange), then linking to the signed-in user or signing in by the
// account rules (service.ts) and the step after a first factor (sign-in/step.ts). The route
// only turns the result into cookies and a redirect.
import { recordAudit } from '../../shared/audit.js'
import type { RequestContext } from '../../shared/context.js'
import { AppError } from '../../shared/errors.js'
import { afterFirstFactor, type BrowserState, type SignInDeps, type SignInOutcome } from '../sign-in/step.js'
import type { IdpFlow } from './flow-cookie.js'
import { type IdentityProvider, IdpError, type IdpIdentity, safeEqual } from './oauth.js'
import { IDP } from './queries.js'
import { type IdpDeps, linkIdentity, signInWithIdentity } from './service.js'

const PROVIDER_ERROR = /^[a-z_]{1,64}$/

export interface FlowUrls {
  callbackURL: string
  errorCallbackURL: string
  newUserCallbackURL: string
}

export interface CallbackDeps extends IdpDeps, SignInDeps {
  provider: IdentityProvider
  issuer: string
  webOrigin: string
}

export type CallbackResult =
  /** To the error URL with `?error=`; `why` is for the log only. */
  | { kind: 'failed'; error: string; why: string; errorUrl: string }
  | { kind: 'linked'; to: string }
  /** The session or the second-factor challenge: its cookies, then `to`. */
  | { kind: 'signed-in'; outcome: SignInOutcome; to: string }

export async function completeCallback(
  deps: CallbackDeps,
  ctx: RequestContext & { userId: string | null },
  input: {
    flow: IdpFlow | null
    query: { code?: string; state?: string; error?: string; iss?: string }
    browser: BrowserState
    /** The flow's URLs judged by today's redirect rules; throws for one they no longer allow. */
    urlsOf: (flow: IdpFlow) => FlowUrls
  },
): Promise<CallbackResult> {
  const fail = async (error: string, why: string, errorUrl = `${deps.webOrigin}/auth/error`): Promise<CallbackResult> => {
    await recordAudit(deps.db, { actorId: null, action: 'auth.idp.sign_in_failed', ip: ctx.ip, details: { error } })
    return { kind: 'failed', error, why, errorUrl }
  }
  const { flow } = input
  const { code, state, error, iss } = input.query
  if (!flow) return fail('state_mismatch', 'no valid flow cookie')
  // Judged again, not trusted because the cookie is signed: a cookie from before a change of
  // trusted origins (or of these rules) must not redirect anywhere they no longer allow.
  let urls: FlowUrls
  try {
    urls = input.urlsOf(flow)
  } catch {
    return fail('state_mismatch', 'flow cookie holds an untrusted URL')
  }
  const onError = (c: string, why: string) => fail(c, why, urls.errorCallbackURL)
  if (deps.clock.now().getTime() > flow.expiresAt) return onError('state_mismatch', 'flow expired')
  // Constant time: the state is the CSRF token of the whole flow.
  if (!state || !safeEqual(state, flow.state)) return onError('state_mismatch', 'state does not match the flow')
  // A flow cookie tossed into a guest's browser (a sibling subdomain) with the attacker's callback
  // would sign it in to the attacker's account and take what the guest made: a guest's browser
  // completes only a flow it started itself, as a sign-in link it asked for (routes/mailbox.ts).
  const { guest } = input.browser
  if (guest && guest !== flow.guest) return onError('state_mismatch', 'the flow was started in another browser than this guest')
  // RFC 9207: an `iss` naming another issuer means a mix-up between providers.
  if (iss !== undefined && iss !== deps.issuer) return onError('issuer_mismatch', 'iss parameter is another issuer')
  if (error !== undefined) return onError(PROVIDER_ERROR.test(error) ? error : 'provider_error', 'provider answered an error')
  if (!code) return onError('invalid_code', 'no code')

  let identity: IdpIdentity
  try {
    identity = await deps.provider.exchange(code, flow.codeVerifier, flow.nonce, deps.clock.now())
  } catch (err) {
    if (err instanceof IdpError) return onError(err.code, err.message)
    throw err
  }
  if (flow.linkUserId !== undefined) {
    // Linking needs the very user who started it still signed in in this browser.
    if (ctx.userId !== flow.linkUserId) return onError('unable_to_link_account', 'not signed in as the linking user')
    const linked = await linkIdentity(deps, ctx, flow.linkUserId, identity)
    if (!linked.ok) return onError(linked.error, 'link rules')
    return { kind: 'linked', to: urls.callbackURL }
  }
  const account = await signInWithIdentity(deps, ctx, identity)
  if (!account.ok) return onError(account.error, 'account rules')
  const user = { id: account.userId, credentialEpoch: account.credentialEpoch }
  let outcome: SignInOutcome
  try {
    outcome = await afterFirstFactor(deps, ctx, {
      user,
      method: IDP,
      rememberMe: true,
      browser: input.browser,
      link: account.pendingLink,
    })
  } catch (err) {
    // A ban that landed after the account rules passed: the browser still goes to the error URL.
    if (err instanceof AppError && err.code === 'BANNED_USER') return onError(err.code, 'banned meanwhile')
    throw err
  }
  if (outcome.kind === 'challenge') {
    // No session yet: the web app's two-factor page asks for the code (the `two_factor` cookie is
    // set), then sends the browser on to where the sign-in was going.
    const page = new URL('/two-factor', deps.webOrigin)
    page.searchParams.set('callbackURL', urls.callbackURL)
    // Which second step the page offers: a code (the two_factor cookie is set) or a passkey.
    page.searchParams.set('twoFactorMethods', outcome.methods.join(','))
    return { kind: 'signed-in', outcome, to: page.toString() }
  }
  return { kind: 'signed-in', outcome, to: account.isNewUser ? urls.newUserCallbackURL : urls.callbackURL }
}
