// Frozen once landed: a change is a new migration.
//
// Each process keeps validated sessions in memory (src/auth/session/cache.ts). These triggers tell
// every process when a cached row stops being true, whoever changed it: another instance, the
// command line, the import, an operator's SQL. NOTIFY is transactional: it is delivered at commit,
// and not at all on rollback. Payloads: `s:<token hash>` (a session), `u:<user id>` (a user and so
// every session of theirs), `*` (a TRUNCATE: forget everything). Inserts need no notice: nothing
// can be cached before its row exists.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function notify_session_changed() returns trigger language plpgsql as $$
    begin
      perform pg_notify('auth_cache', 's:' || old.token_hash);
      return null;
    end $$`.execute(db)
  await sql`
    create function notify_user_changed() returns trigger language plpgsql as $$
    begin
      perform pg_notify('auth_cache', 'u:' || old.id);
      return null;
    end $$`.execute(db)
  await sql`
    create function notify_all_changed() returns trigger language plpgsql as $$
    begin
      perform pg_notify('auth_cache', '*');
      return null;
    end $$`.execute(db)
  await sql`create trigger session_changed after update or delete on "session"
    for each row execute function notify_session_changed()`.execute(db)
  await sql`create trigger user_changed after update or delete on "user"
    for each row execute function notify_user_changed()`.execute(db)
  await sql`create trigger session_truncated after truncate on "session"
    for each statement execute function notify_all_changed()`.execute(db)
  await sql`create trigger user_truncated after truncate on "user"
    for each statement execute function notify_all_changed()`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const [trigger, table] of [
    ['session_changed', 'session'],
    ['user_changed', 'user'],
    ['session_truncated', 'session'],
    ['user_truncated', 'user'],
  ] as const) {
    await sql`drop trigger ${sql.id(trigger)} on ${sql.id(table)}`.execute(db)
  }
  await sql`drop function notify_session_changed(), notify_user_changed(), notify_all_changed()`.execute(db)
}
