// The identity provider's accounts: rows of `account` with provider_id 'idp' and the provider's subject.
import type { Trx } from '../../../db/index.js'

export const IDP = 'idp'

/** The user linked to the provider's subject `sub`. */
export async function findUserBySubject(
  trx: Trx,
  sub: string,
): Promise<{ id: string; email: string; two_factor_enabled: boolean } | undefined> {
  return trx
    .selectFrom('account')
    .innerJoin('user', 'user.id', 'account.user_id')
    .select(['user.id', 'user.email', 'user.two_factor_enabled'])
    .where('account.provider_id', '=', IDP)
    .where('account.account_id', '=', sub)
    .executeTakeFirst()
}
