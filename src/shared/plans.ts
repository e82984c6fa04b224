// The plans a user can be on. A column of the user row (src/user/), so it lives below every domain,
// as the roles do (roles.ts); the usage domain holds their limits (src/usage/plans.ts). Imports
// nothing: the contract (src/contract/) reads the list too.

/** The one list of plans: schemas (z.enum(PLANS)), limits and analytics all read it from here. */
export const PLANS = ['free', 'premium', 'premium_plus'] as const
export type Plan = (typeof PLANS)[number]
