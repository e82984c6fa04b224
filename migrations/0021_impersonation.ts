// Frozen once landed: a change is a new migration.
//
// Impersonation (better-auth's admin plugin, POST /api/auth/admin/impersonate-user): a session of
// a member opened by an administrator carries who opened it (`impersonated_by`, the plugin's
// `impersonatedBy`) and the administrator's own session it was opened from. It lives no longer than
// that session: whatever ends the administrator's session (a revocation, a ban, a demotion, a
// sign-out) deletes it by the cascade, and the session trigger (0008) tells every instance's cache.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('session')
    .addColumn('impersonated_by', 'text', (c) => c.references('user.id').onDelete('cascade'))
    .addColumn('impersonator_session_id', 'text', (c) => c.references('session.id').onDelete('cascade'))
    .execute()
  // The cascades look these up; partial, since nearly every session is nobody's impersonation.
  for (const column of ['impersonator_session_id', 'impersonated_by']) {
    await db.schema.createIndex(`session_${column}_idx`).on('session').column(column).where(column, 'is not', null).execute()
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('session').dropColumn('impersonator_session_id').dropColumn('impersonated_by').execute()
}
