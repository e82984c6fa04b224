// The roles, compared as plain strings (no ACL system): every layer that decides access uses them.
export const ROLES = ['member', 'admin', 'owner'] as const
export type Role = (typeof ROLES)[number]
