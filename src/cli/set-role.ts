// `set-role <email> <member|admin|owner>`: the way to make the first owner from a shell. The
// change and its audit event are one transaction; the role applies from the user's next request.
import type { DB } from '../../db/index.js'
import { recordAudit } from '../admin/audit.js'
import type { Role } from '../auth/tables.js'

export type SetRoleResult = { ok: true; from: Role; to: Role } | { ok: false; reason: 'no_such_user' }

export async function setRole(db: DB, email: string, role: Role): Promise<SetRoleResult> {
  return db.transaction().execute(async (trx) => {
    const user = await trx
      .selectFrom('user')
      .select(['id', 'role'])
      .where('email', '=', email.trim().toLowerCase())
      .forUpdate()
      .executeTakeFirst()
    if (!user) return { ok: false, reason: 'no_such_user' } as const
    if (user.role !== role) {
      await trx.updateTable('user').set({ role, updated_at: new Date() }).where('id', '=', user.id).execute()
      await recordAudit(trx, {
        actorId: null,
        action: 'admin.user.role_changed',
        targetType: 'user',
        targetId: user.id,
        details: { from: user.role, to: role, via: 'cli' },
      })
    }
    return { ok: true, from: user.role, to: role } as const
  })
}
