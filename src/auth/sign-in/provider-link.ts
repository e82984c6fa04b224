// A provider login that waits for the second factor. The identity provider vouches for an address;
// for an account with a second factor that is a proof of the mailbox and no more (second-factor.ts),
// so its provider login is linked only once the second step passed, in the transaction that births
// the session (sign-in/step.ts). A sign-in abandoned at the second step leaves no link behind.
import type { Trx } from '../../../db/index.js'
import { recordUserEvent } from '../../shared/audit.js'
import type { RequestContext } from '../../shared/context.js'
import { linkProviderLogin } from '../core/queries.js'
import type { PendingLink } from '../links/challenges.js'
import type { PendingNotice, SecurityNotices } from '../security/notices.js'
import { staleSignIn } from '../session/sessions.js'
import { findUserById } from '../../user/queries.js'

export type { PendingLink }

/**
 * Links the provider login to `userId` in the session's transaction (the user row share-locked
 * there). The provider vouched for the account's address at the first step: an account whose address
 * changed since, or a login linked to another account meanwhile, is a stale sign-in (401, no
 * session, no link). Returns the owner's notice to mail once the transaction committed.
 */
export async function completePendingLink(
  trx: Trx,
  deps: { notices: SecurityNotices },
  ctx: RequestContext,
  userId: string,
  link: PendingLink,
): Promise<PendingNotice> {
  const user = await findUserById(trx, userId)
  if (user?.email !== link.email) throw staleSignIn()
  const linked = await linkProviderLogin(trx, { userId, providerId: link.providerId, accountId: link.subject })
  if (linked === 'other') throw staleSignIn()
  if (linked === 'already') return () => {}
  await recordUserEvent(trx, ctx, userId, 'auth.idp.account_linked', { afterSecondFactor: true })
  return deps.notices.prepare(trx, ctx, userId, 'provider_linked')
}
