// Issue 34, finding 8 (informational): the data export carried live code hashes and passkey user
// handles. Every secret the database holds about a user (token and code hashes, the codes' MACs, a
// ceremony's challenge and user handle, passkey user handles, the TOTP secret, backup codes' hashes,
// device hashes, the password hash) is read from the database here and must appear nowhere in the
// export, while what the user may know of those records (that they exist, when, for which address) stays.
import t from 'tap'
import { newId } from '../../src/shared/ids.js'
import { buildTestApp, call, signUp } from '../helpers/app.js'
import { enableTotp } from '../helpers/two-factor.js'

const app = await buildTestApp()
const user = await signUp(app, { name: 'Sam Secret' })

// Two-factor on: an encrypted secret and backup codes' hashes.
const { confirmed } = await enableTotp(app, user, new Date())
if (confirmed.statusCode !== 200) throw new Error(`two-factor: ${confirmed.body}`)
// Pending emailed proofs: a sign-in code (its MAC in `data.code`), a reset link (a token hash).
for (const [url, body] of [
  ['/api/auth/email-otp/send-verification-otp', { email: user.email, type: 'sign-in' }],
  ['/api/auth/request-password-reset', { email: user.email }],
] as const) {
  const res = await call(app, 'POST', url, { body })
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.body}`)
}
// A passkey ceremony under way (its challenge and the user handle it offers) and a stored passkey.
const ceremony = await call(app, 'GET', '/api/auth/passkey/generate-register-options', { cookie: user.cookie })
if (ceremony.statusCode !== 200) throw new Error(`passkey options: ${ceremony.body}`)
const userHandle = `handle-${newId()}`
await app.db
  .insertInto('passkey')
  .values({
    id: newId(),
    user_id: user.id,
    name: 'Laptop',
    credential_id: `cred-${newId()}`,
    public_key: 'cHVibGljLWtleQ',
    user_handle: userHandle,
    counter: 0,
    device_type: 'singleDevice',
    backed_up: false,
    transports: 'internal',
  })
  .execute()
await app.settled()

/** Every secret value the database holds about the user. */
async function secretsOf(userId: string): Promise<Array<[string, string]>> {
  const found: Array<[string, string]> = []
  const add = (where: string, value: unknown) => {
    if (typeof value === 'string' && value.length >= 8) found.push([where, value])
  }
  for (const r of await app.db.selectFrom('session').select('token_hash').where('user_id', '=', userId).execute())
    add('session.token_hash', r.token_hash)
  for (const r of await app.db.selectFrom('account').select('password_hash').where('user_id', '=', userId).execute())
    add('account.password_hash', r.password_hash)
  for (const r of await app.db
    .selectFrom('verification')
    .select(['purpose', 'token_hash', 'data'])
    .where('user_id', '=', userId)
    .execute()) {
    add(`verification(${r.purpose}).token_hash`, r.token_hash)
    for (const key of ['code', 'challenge', 'userHandle']) add(`verification(${r.purpose}).data.${key}`, r.data[key])
  }
  for (const r of await app.db.selectFrom('passkey').select('user_handle').where('user_id', '=', userId).execute())
    add('passkey.user_handle', r.user_handle)
  for (const r of await app.db.selectFrom('two_factor').select('secret').where('user_id', '=', userId).execute())
    add('two_factor.secret', r.secret)
  for (const r of await app.db.selectFrom('two_factor_backup_code').select('code_hash').where('user_id', '=', userId).execute())
    add('two_factor_backup_code.code_hash', r.code_hash)
  for (const r of await app.db.selectFrom('known_device').select('device_hash').where('user_id', '=', userId).execute())
    add('known_device.device_hash', r.device_hash)
  return found
}

t.test('the export holds none of the secrets the database keeps about the user', async (t) => {
  const secrets = await secretsOf(user.id)
  const kinds = new Set(secrets.map(([where]) => where.replace(/\(.*\)/, '()')))
  for (const kind of [
    'session.token_hash',
    'account.password_hash',
    'verification().token_hash',
    'verification().data.code',
    'verification().data.challenge',
    'verification().data.userHandle',
    'passkey.user_handle',
    'two_factor.secret',
    'two_factor_backup_code.code_hash',
    'known_device.device_hash',
  ]) {
    t.ok(kinds.has(kind), `the test has a ${kind} to look for`)
  }
  const res = await call(app, 'GET', '/api/v1/me/export', { cookie: user.cookie })
  t.equal(res.statusCode, 200)
  for (const [where, value] of secrets) t.notOk(res.body.includes(value), `${where} is not exported`)
  t.notMatch(res.body, /userHandle|user_handle|codeHash|tokenHash|"challenge"|"code"/, 'nor any key that names one')
})

t.test('what the user may know of those records stays', async (t) => {
  const exported = (await call(app, 'GET', '/api/v1/me/export', { cookie: user.cookie })).json()
  t.same(
    exported.passkeys.map((p: { name: string }) => p.name),
    ['Laptop'],
  )
  const purposes = exported.verifications.map((v: { purpose: string }) => v.purpose).sort()
  t.ok(purposes.includes('sign-in-code') && purposes.includes('reset-password'), 'pending proofs are listed')
  for (const v of exported.verifications) t.ok(v.expiresAt, `${v.purpose}: when it expires`)
  t.ok(exported.twoFactorBackupCodes.length > 0, 'one entry per unused backup code')
  t.ok(exported.knownDevices[0].firstSeenAt)
})

t.test('a pending change of address still shows its addresses: they are the user’s data', async (t) => {
  const newEmail = `moving-${newId()}@example.com`.toLowerCase()
  const res = await call(app, 'POST', '/api/auth/change-email', { cookie: user.cookie, body: { newEmail } })
  t.equal(res.statusCode, 200)
  await app.settled()
  const exported = (await call(app, 'GET', '/api/v1/me/export', { cookie: user.cookie })).json()
  // A verified address approves the change first (its link), an unverified one goes straight to the new address's.
  const change = exported.verifications.find((v: { purpose: string }) =>
    ['change-email-confirmation', 'change-email-verification'].includes(v.purpose),
  )
  t.same(change?.data, { email: user.email, newEmail })
})
