// Erasure (DELETE /api/v1/me) scrubs the account's email address from audit details, but only the
// address the account has at the moment it is deleted (anonymiseKeptRecords in
// src/personal-data/queries.ts replaces JSON strings equal to user.email). An address the person
// used before a change of email stays in the audit log for good, e.g. in an admin's search for
// them (admin.users.listed, details.filters.email): personal data the deletion promised to remove
// ("removes email addresses from audit details about the user", docs/architecture.md).
import { sql } from 'kysely'
import t from 'tap'
import { issueToken } from '../../src/auth/verification.js'
import { buildTestApp, call, signUp, signUpWithRole } from '../helpers/app.js'

t.test('deleting an account removes its former email addresses from the audit log too', async (t) => {
  const app = await buildTestApp()
  const admin = await signUpWithRole(app, 'admin')
  const user = await signUp(app)
  const former = user.email

  // An admin looks the person up by their address (audited with the filter).
  const search = await call(app, 'GET', `/api/v1/admin/users?email=${encodeURIComponent(former)}`, { cookie: admin.cookie })
  t.equal(search.statusCode, 200)

  // The person moves to a new address (the link of change-email, as mailed to the new address).
  const newEmail = `moved-${Date.now()}@example.com`
  const token = await issueToken(app.db, 'change-email-verification', user.id, {
    expiresAt: new Date(Date.now() + 3_600_000),
    data: { email: former, newEmail, callbackURL: null },
  })
  const verified = await call(app, 'GET', `/api/auth/verify-email?token=${token}`)
  t.equal(verified.statusCode, 200, 'the address changed')

  // Then asks for erasure.
  const erased = await call(app, 'DELETE', '/api/v1/me', { cookie: user.cookie, body: { password: user.password } })
  t.equal(erased.statusCode, 204)

  const left = await sql<{ action: string }>`select action from audit_event where details::text like ${`%${former}%`}`.execute(
    app.db,
  )
  t.same(
    left.rows.map((r) => r.action),
    [],
    'no audit event still carries the erased person\'s former address',
  )
})
