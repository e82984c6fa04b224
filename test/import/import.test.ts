// The import command end to end: the real CLI code path (main) against the file's database, then
// the real app signs the imported users in.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { verifyPassword } from 'better-auth/crypto'
import { sql } from 'kysely'
import t from 'tap'
import { EXIT, main } from '../../src/cli/import.js'
import type { ImportReport } from '../../src/import/report.js'
import { linkIn, startSmtpServer } from '../helpers/smtp.js'
import { buildTestApp, call, sessionCookieOf, signUp, TEST_ENV } from '../helpers/app.js'
import { logLines } from '../helpers/log-lines.js'
import { ROOT } from '../helpers/paths.js'

const smtp = await startSmtpServer()
const app = await buildTestApp({ env: { SMTP_URL: smtp.url } })
const FIXTURE = join(ROOT, 'test/fixtures/import/previous-system.json')
const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8'))

/** The passwords behind the fixture's hashes (generated with node:crypto, @node-rs/argon2, bcryptjs). */
const PASSWORDS: Record<string, string> = {
  u_1001: 'sari-scrypt-pass',
  u_1002: 'bima-bcrypt-pass',
  u_1003: 'dewi-argon2-pass',
  u_1004: 'eka-md5-pass',
  u_1005: 'fajar-sha1-pass',
  u_1006: 'gita-sha256-pass',
  u_1007: 'hadi-plain-pass',
  u_1009: 'joko-bcrypt-pass',
}
const IMPORTED = ['u_1001', 'u_1002', 'u_1003', 'u_1004', 'u_1005', 'u_1006', 'u_1007', 'u_1008', 'u_1009', 'u_1010']

async function runImport(args: string[]): Promise<{ code: number; report: ImportReport; log: string }> {
  const out = logLines()
  const err = logLines()
  const code = await main(args, { env: TEST_ENV, database: app.database, stdout: out.stream, stderr: err.stream })
  return { code, report: JSON.parse(out.text()), log: err.text() }
}

async function writeFile(name: string, doc: unknown): Promise<string> {
  const dir = t.testdir({ [name]: JSON.stringify(doc) })
  return `${dir}/${name}`
}

/** Every imported row of every table, to compare before and after a run. */
async function snapshot() {
  const ids = IMPORTED
  return {
    users: await app.db.selectFrom('user').selectAll().where('id', 'in', ids).orderBy('id').execute(),
    accounts: await app.db.selectFrom('account').selectAll().where('user_id', 'in', ids).orderBy('id').execute(),
    entries: await app.db.selectFrom('journal_entry').selectAll().orderBy('id').execute(),
    results: await app.db.selectFrom('compatibility_result').selectAll().orderBy('id').execute(),
    consents: await app.db.selectFrom('consent_record').selectAll().orderBy('id').execute(),
    records: await app.db.selectFrom('import_record').selectAll().orderBy('section').orderBy('source_key').execute(),
  }
}

const signIn = (email: string, password: string) => call(app, 'POST', '/api/auth/sign-in/email', { body: { email, password } })

t.test('the fixture scrypt hash is exactly what better-auth produces', async (t) => {
  t.ok(await verifyPassword({ hash: fixture.users[0].password.hash, password: PASSWORDS.u_1001! }))
})

t.test('--dry-run writes nothing but produces the full report', async (t) => {
  const before = await snapshot()
  const { code, report } = await runImport([FIXTURE, '--dry-run'])
  t.equal(code, EXIT.rejected)
  t.equal(report.dryRun, true)
  t.equal(report.committed, false)
  t.match(report.counts.users, { total: 16, created: 10, rejected: 6 })
  t.ok(report.rejected.length > 0)
  t.same(await snapshot(), before)
  const audit = await app.db.selectFrom('audit_event').select('id').where('action', '=', 'import.completed').execute()
  t.equal(audit.length, 0, 'not even the audit event')
})

t.test('--strict with a rejected row writes nothing at all', async (t) => {
  const before = await snapshot()
  const { code, report } = await runImport([FIXTURE, '--strict'])
  t.equal(code, EXIT.rejected)
  t.equal(report.committed, false)
  t.same(await snapshot(), before)
})

let firstReport: ImportReport
t.test('imports every valid row and lists every rejected one with its reason', async (t) => {
  const { code, report, log } = await runImport([FIXTURE])
  firstReport = report
  t.equal(code, EXIT.rejected, 'exit status says rows were rejected')
  t.equal(report.committed, true)
  t.match(report.counts, {
    users: { total: 16, created: 10, rejected: 6 },
    accounts: { total: 3, created: 1, rejected: 2 },
    journalEntries: { total: 6, created: 2, rejected: 4 },
    compatibilityResults: { total: 4, created: 2, rejected: 2 },
    consents: { total: 4, created: 2, rejected: 2 },
  })
  const rejected = report.rejected.map((r) => `${r.section}[${r.index}] ${r.id ?? r.userId}: ${r.reason}`)
  const expect = [
    /^users\[10\] u_2001: email: invalid email/,
    /^users\[11\] u_2002: duplicate email "dup@example.id" \(rows 11, 12\)/,
    /^users\[12\] u_2003: duplicate email "dup@example.id"/,
    /^users\[13\] u_2004: password.hash is not scrypt/,
    /^users\[14\] u_2005: unsupported password.algorithm "pbkdf2"/,
    /^users\[15\] u_2006: createdAt: not an ISO-8601 date-time/,
    /^accounts\[1\] u_9999: orphan: user "u_9999"/,
    /^accounts\[2\] u_1001: unknown providerId "github"/,
    /^journalEntries\[2\] j_3: orphan: user "u_9999"/,
    /^journalEntries\[3\] j_4: entryDate: not a valid YYYY-MM-DD date/,
    /^journalEntries\[4\] j_5: orphan: user "u_2001"/,
    /^journalEntries\[5\] j_6: mood: /,
    /^compatibilityResults\[2\] c_3: orphan: user "u_9999"/,
    /^compatibilityResults\[3\] c_4: systems.0: not one of/,
    /^consents\[2\] u_9999: orphan: user "u_9999"/,
    /^consents\[3\] u_1002: type: not one of/,
  ]
  t.equal(rejected.length, expect.length, rejected.join('\n'))
  for (const [i, re] of expect.entries()) t.match(rejected[i], re)
  const warnings = report.warnings.map((w) => `${w.section}[${w.index}]: ${w.reason}`)
  t.same(warnings, [
    'document[-1]: unknown sections ignored: exportedAt',
    'users[1]: unknown keys ignored: nickname',
    'users[8]: unknown role "moderator" imported as member',
  ])
  t.match(report.credentials, {
    scrypt: 1,
    bcrypt: 2,
    argon2: 1,
    md5: 1,
    sha1: 1,
    sha256: 1,
    plain: 1,
    none: 2,
    resetRequired: 4,
  })
  t.match(report.roles, { member: 8, admin: 1, owner: 1, mappedFromUser: 6, unknownToMember: 1 })
  t.match(log, /import: checking users: 0\/10/, 'plain progress lines when stderr is not a terminal')

  const audit = await app.db.selectFrom('audit_event').selectAll().where('action', '=', 'import.completed').execute()
  t.equal(audit.length, 1)
  t.match(audit[0]!.details, { counts: { users: { created: 10, rejected: 6 } } })
})

t.test('ids are preserved, emails lowercased, roles mapped', async (t) => {
  const users = await app.db
    .selectFrom('user')
    .select(['id', 'email', 'role', 'plan', 'password_reset_required', 'created_at'])
    .where('id', 'in', IMPORTED)
    .orderBy('id')
    .execute()
  t.same(
    users.map((u) => u.id),
    IMPORTED,
  )
  const byId = Object.fromEntries(users.map((u) => [u.id, u]))
  t.equal(byId.u_1001!.email, 'sari@example.id')
  t.equal(byId.u_1001!.role, 'member', 'user becomes member')
  t.equal(byId.u_1002!.role, 'admin')
  t.equal(byId.u_1003!.role, 'owner')
  t.equal(byId.u_1009!.role, 'member', 'an unknown role becomes member')
  t.equal(byId.u_1002!.plan, 'premium')
  t.equal(byId.u_1002!.created_at.toISOString(), '2024-03-02T02:30:00.000Z')
  for (const id of ['u_1004', 'u_1005', 'u_1006', 'u_1007']) t.equal(byId[id]!.password_reset_required, true, `${id} must reset`)
  for (const id of ['u_1001', 'u_1002', 'u_1003', 'u_1008', 'u_1009']) t.equal(byId[id]!.password_reset_required, false)
})

t.test('no password is stored as it came: plain hashed, weak digests wrapped, strong ones kept', async (t) => {
  const accounts = await app.db
    .selectFrom('account')
    .select(['user_id', 'provider_id', 'account_id', 'password_hash'])
    .where('user_id', 'in', IMPORTED)
    .execute()
  const hashOf = (id: string) => accounts.find((a) => a.user_id === id && a.provider_id === 'credential')?.password_hash
  t.match(hashOf('u_1001'), /^\$scrypt\$n=16384,r=16,p=1\$[0-9a-f]{32}\$[0-9a-f]{128}$/)
  t.equal(hashOf('u_1002'), fixture.users[1].password.hash)
  t.equal(hashOf('u_1003'), fixture.users[2].password.hash)
  t.match(hashOf('u_1004'), /^\$weak-md5\$argon2id\$/)
  t.match(hashOf('u_1005'), /^\$weak-sha1\$argon2id\$/)
  t.match(hashOf('u_1006'), /^\$weak-sha256\$argon2id\$/)
  t.match(hashOf('u_1007'), /^\$argon2id\$/)
  t.notMatch(hashOf('u_1007'), /hadi-plain-pass/)
  t.equal(hashOf('u_1008'), undefined, 'algorithm none: no credential account')
  t.equal(hashOf('u_1010'), undefined, 'no password: no credential account')
  t.ok(accounts.find((a) => a.user_id === 'u_1008' && a.provider_id === 'idp' && a.account_id === 'idp-subject-1008'))
  const records = await app.db.selectFrom('import_record').select(['source_digest', 'written_digest']).execute()
  for (const r of records) t.notMatch(JSON.stringify(r), /hadi-plain-pass|eka-md5/)
})

t.test('journal entries and results keep pointing at the preserved user ids', async (t) => {
  const entries = await app.db.selectFrom('journal_entry').selectAll().orderBy('id').execute()
  t.same(
    entries.map((e) => [e.id, e.user_id, e.entry_date]),
    [
      ['j_1', 'u_1001', '2024-05-02'],
      ['j_2', 'u_1007', '2024-05-03'],
    ],
  )
  t.same(entries[0]!.tags, ['rest'])
  const results = await app.db.selectFrom('compatibility_result').selectAll().orderBy('id').execute()
  t.same(
    results.map((r) => [r.id, r.user_id, r.payment_id, r.deep_insights_unlocked]),
    [
      ['c_1', 'u_1001', null, false],
      ['c_2', 'u_1002', 'pay_old_77', true],
    ],
  )
  t.same(results[1]!.partner, { name: 'Sari', birthDate: '1994-02-17', birthTime: '07:45' })
  const consents = await app.db.selectFrom('consent_record').select(['user_id', 'type', 'granted']).orderBy('type').execute()
  t.same(consents, [
    { user_id: 'u_1001', type: 'marketing', granted: false },
    { user_id: 'u_1001', type: 'terms', granted: true },
  ])
})

t.test('strong hashes sign in with the old password and are upgraded to Argon2id', async (t) => {
  for (const id of ['u_1001', 'u_1002', 'u_1003', 'u_1009']) {
    const email = (await app.db.selectFrom('user').select('email').where('id', '=', id).executeTakeFirstOrThrow()).email
    const wrong = await signIn(email, 'not-the-password')
    t.equal(wrong.statusCode, 401, `${id} wrong password`)
    t.equal(wrong.json().code, 'INVALID_EMAIL_OR_PASSWORD')
    const res = await signIn(email.toUpperCase(), PASSWORDS[id]!)
    t.equal(res.statusCode, 200, `${id} signs in (email compared case-insensitively)`)
    t.equal(res.json().user.id, id)
    const stored = await app.db
      .selectFrom('account')
      .select('password_hash')
      .where('user_id', '=', id)
      .where('provider_id', '=', 'credential')
      .executeTakeFirstOrThrow()
    t.match(stored.password_hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/, `${id} upgraded`)
  }
})

t.test('weak and plain passwords get PASSWORD_RESET_REQUIRED, a wrong one the usual 401', async (t) => {
  for (const id of ['u_1004', 'u_1005', 'u_1006', 'u_1007']) {
    const email = (await app.db.selectFrom('user').select('email').where('id', '=', id).executeTakeFirstOrThrow()).email
    const res = await signIn(email, PASSWORDS[id]!)
    t.equal(res.statusCode, 403, `${id} right password`)
    t.equal(res.json().code, 'PASSWORD_RESET_REQUIRED')
    const wrong = await signIn(email, 'not-the-password')
    t.equal(wrong.statusCode, 401, `${id} wrong password`)
    t.equal(wrong.json().code, 'INVALID_EMAIL_OR_PASSWORD')
  }
  const none = await signIn('indah@example.id', 'anything-at-all')
  t.equal(none.statusCode, 401, 'a user without a password cannot sign in with one')
})

t.test('an imported user who must reset gets the mail, resets, and signs in with the new password', async (t) => {
  const email = 'fajar@example.id'
  const res = await signIn(email, PASSWORDS.u_1005!)
  t.equal(res.json().code, 'PASSWORD_RESET_REQUIRED')
  const token = linkIn(await smtp.inbox.next(email)).searchParams.get('token')!
  const reset = await call(app, 'POST', '/api/auth/reset-password', { body: { token, newPassword: 'fajar-chose-a-new-one' } })
  t.equal(reset.statusCode, 200)
  const user = await app.db
    .selectFrom('user')
    .select('password_reset_required')
    .where('id', '=', 'u_1005')
    .executeTakeFirstOrThrow()
  t.equal(user.password_reset_required, false)
  t.equal((await signIn(email, 'fajar-chose-a-new-one')).statusCode, 200)
  t.equal((await signIn(email, PASSWORDS.u_1005!)).statusCode, 401, 'the old password is gone')
})

t.test('a second run of the same file changes nothing', async (t) => {
  const before = await snapshot()
  const { code, report } = await runImport([FIXTURE])
  t.equal(code, EXIT.rejected)
  t.match(report.counts, {
    users: { created: 0, updated: 0, unchanged: 10, rejected: 6 },
    accounts: { created: 0, updated: 0, unchanged: 1 },
    journalEntries: { created: 0, updated: 0, unchanged: 2 },
    compatibilityResults: { created: 0, updated: 0, unchanged: 2 },
    consents: { created: 0, updated: 0, unchanged: 2 },
  })
  t.equal(report.credentials.keptSinceChangedInApp, 5, "the hashes upgraded at sign-in or reset are the users' now")
  t.same(report.rejected, firstReport.rejected)
  t.same(await snapshot(), before, 'rows and updated_at unchanged')
})

t.test('a corrected file updates what changed and nothing else', async (t) => {
  const corrected = structuredClone(fixture)
  corrected.users[3].name = 'Eka Putri' // profile change
  corrected.users[6].password.hash = 'hadi-new-plain-pass' // plain password changed
  corrected.users[9].password = { algorithm: 'md5', hash: '5f4dcc3b5aa765d61d8327deb882cf99' } // gets a password
  corrected.users[1].password.hash = '$2b$10$abcdefghijklmnopqrstuu5mBd4uK3hKL2vQsnhdbbLnYvWDWAc8y' // but u_1002 changed theirs in the app
  corrected.users[10].email = 'broken@example.id' // a rejected row fixed
  corrected.journalEntries[0].content = 'Hari yang tenang sekali.'
  corrected.journalEntries[3].entryDate = '2024-05-04'
  corrected.consents[1].granted = true
  const before = await snapshot()
  const file = await writeFile('corrected.json', corrected)
  const { report } = await runImport([file])
  t.match(report.counts, {
    users: { created: 1, updated: 3, unchanged: 7, rejected: 5 },
    journalEntries: { created: 2, updated: 1, unchanged: 1 },
    consents: { updated: 1, unchanged: 1 },
  })
  t.match(
    report.warnings.map((w) => w.reason),
    [/exportedAt/, /nickname/, /the password in the file changed, but the account changed its password/, /moderator/],
  )
  const after = await snapshot()
  const user = (s: typeof before, id: string) => s.users.find((u) => u.id === id)!
  t.equal(user(after, 'u_1004').name, 'Eka Putri')
  t.same(user(after, 'u_1001'), user(before, 'u_1001'), 'an unchanged user is untouched')
  t.same(
    after.accounts.find((a) => a.user_id === 'u_1002'),
    before.accounts.find((a) => a.user_id === 'u_1002'),
    'a password changed in the app is kept',
  )
  t.equal(user(after, 'u_1010').password_reset_required, true)
  t.equal(user(after, 'u_1005').password_reset_required, false, 'a password reset since the import stays done')
  t.equal((await signIn('fajar@example.id', 'fajar-chose-a-new-one')).statusCode, 200)
  const hadi = await signIn('hadi@example.id', 'hadi-new-plain-pass')
  t.equal(hadi.json().code, 'PASSWORD_RESET_REQUIRED')
  t.equal((await signIn('hadi@example.id', 'hadi-plain-pass')).statusCode, 401, 'the old plain password no longer matches')
  t.equal((await signIn('kartika@example.id', 'password')).json().code, 'PASSWORD_RESET_REQUIRED')
  t.equal(after.entries.find((e) => e.id === 'j_1')!.content, 'Hari yang tenang sekali.')
  t.equal(after.entries.find((e) => e.id === 'j_5')!.user_id, 'u_2001', 'the fixed user brings their entry along')

  const again = await runImport([file])
  t.match(again.report.counts.users, { created: 0, updated: 0, unchanged: 11 })
  t.match(again.report.counts.journalEntries, { created: 0, updated: 0, unchanged: 4 })
})

t.test('a row deleted in the app since the import is not re-created', async (t) => {
  await app.db.deleteFrom('journal_entry').where('id', '=', 'j_2').execute()
  const { report } = await runImport([FIXTURE])
  t.match(report.skipped, [{ section: 'journalEntries', id: 'j_2', reason: /deleted in the app since an earlier import/ }])
  t.equal((await app.db.selectFrom('journal_entry').select('id').where('id', '=', 'j_2').execute()).length, 0)
})

t.test('an email already used by another account, or an id the import did not create, is rejected', async (t) => {
  const native = await signUp(app, { email: `native-${process.pid}@example.id` })
  const doc = {
    users: [
      {
        id: 'u_3001',
        email: native.email.toUpperCase(),
        name: 'Taken',
        role: 'user',
        password: { algorithm: 'plain', hash: 'x-pass-1' },
      },
      {
        id: native.id,
        email: 'someone-else@example.id',
        name: 'Overwrite',
        role: 'admin',
        password: { algorithm: 'plain', hash: 'x-pass-2' },
      },
    ],
  }
  const file = await writeFile('conflicts.json', doc)
  const { code, report } = await runImport([file])
  t.equal(code, EXIT.rejected)
  t.match(report.rejected, [
    {
      section: 'users',
      index: 0,
      id: 'u_3001',
      reason: `email "${native.email}" already belongs to another user (id ${native.id})`,
    },
    { section: 'users', index: 1, id: native.id, reason: 'id already belongs to a user that the import did not create' },
  ])
  const user = await app.db.selectFrom('user').select(['name', 'role']).where('id', '=', native.id).executeTakeFirstOrThrow()
  t.same(user, { name: 'Test User', role: 'member' }, 'the existing account is untouched')
  t.equal((await signIn(native.email, native.password)).statusCode, 200)
})

t.test('a row the database refuses at write time is rejected alone; the rest of its batch is written', async (t) => {
  // Something the checks before writing cannot see: a trigger refusing one id.
  await sql`create function refuse_boom() returns trigger language plpgsql as $$
    begin
      if new.id = 'j_boom' then raise exception 'refused' using errcode = '23514'; end if;
      return new;
    end $$`.execute(app.db)
  await sql`create trigger refuse_boom before insert on journal_entry for each row execute function refuse_boom()`.execute(app.db)
  t.teardown(async () => {
    await sql`drop trigger refuse_boom on journal_entry`.execute(app.db)
    await sql`drop function refuse_boom()`.execute(app.db)
  })
  const entry = (id: string) => ({ id, userId: 'u_1003', content: id, mood: 3, entryDate: '2024-07-01' })
  const file = await writeFile('boom.json', { journalEntries: [entry('j_ok_1'), entry('j_boom'), entry('j_ok_2')] })
  const { code, report } = await runImport([file])
  t.equal(code, EXIT.rejected)
  t.match(report.counts.journalEntries, { total: 3, created: 2, rejected: 1 })
  t.match(report.rejected, [{ section: 'journalEntries', index: 1, id: 'j_boom', reason: /^refused by the database: refused/ }])
  const ids = await app.db
    .selectFrom('journal_entry')
    .select('id')
    .where('id', 'in', ['j_ok_1', 'j_boom', 'j_ok_2'])
    .orderBy('id')
    .execute()
  t.same(
    ids.map((r) => r.id),
    ['j_ok_1', 'j_ok_2'],
  )

  const strictFile = await writeFile('boom-strict.json', { journalEntries: [entry('j_ok_3'), entry('j_boom')] })
  const strict = await runImport([strictFile, '--strict'])
  t.equal(strict.code, EXIT.failed)
  t.match(strict.report, { committed: false, error: /rolled back, nothing was written/ })
  t.equal((await app.db.selectFrom('journal_entry').select('id').where('id', '=', 'j_ok_3').execute()).length, 0)
})

t.test('consents are written in file order: the last decision per type is the one in force', async (t) => {
  // No createdAt: every row is stamped with the run's time, so only the order of writing tells them
  // apart; one row per batch, which PostgreSQL runs would otherwise write a few at a time.
  const decisions = Array.from({ length: 24 }, (_, i) => ({
    userId: 'u_1003',
    type: 'analytics',
    version: `v${i}`,
    granted: i % 2 === 0,
  }))
  const file = await writeFile('consent-order.json', { consents: decisions })
  const { report } = await runImport([file, '--batch-size', '1'])
  t.match(report.counts.consents, { total: 24, created: 24 })
  const cookie = sessionCookieOf(await signIn('dewi@example.id', PASSWORDS.u_1003!))
  const { current, history } = (await call(app, 'GET', '/api/v1/consent', { cookie })).json()
  t.same(
    history.filter((h: { type: string }) => h.type === 'analytics').map((h: { version: string }) => h.version),
    decisions.map((d) => d.version).reverse(),
    'newest first, in the order of the file',
  )
  t.match(current.analytics, { version: 'v23', granted: false })
})

t.test('a file that is not an export, or bad arguments, fail clearly', async (t) => {
  const out = logLines()
  const err = logLines()
  const io = { env: TEST_ENV, database: app.database, stdout: out.stream, stderr: err.stream }
  t.equal(await main([], io), EXIT.usage)
  t.equal(await main([FIXTURE, '--nope'], io), EXIT.usage)
  t.equal(await main([FIXTURE, '--batch-size', '0'], io), EXIT.usage)
  t.equal(await main(['/nonexistent/export.json'], io), EXIT.failed)
  t.equal(await main([await writeFile('array.json', [1, 2])], io), EXIT.failed)
  t.equal(await main([await writeFile('section.json', { users: {} })], io), EXIT.failed)
  t.match(err.text(), /section "users" is not an array/)
})
