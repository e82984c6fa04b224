// REQUIRE_ADMIN_TWO_FACTOR=true: admin and owner routes refuse a session that did not pass a second
// factor (403 TWO_FACTOR_REQUIRED); a code at sign-in, a confirmed setup or a trusted device passes.
import t from 'tap'
import { proveAddress } from '../../helpers/app.js'
import { browser, codeAt, PASSWORD, secretOf, twoFactorApp } from '../../helpers/two-factor.js'

const { app, clock, baseURL } = await twoFactorApp({ REQUIRE_ADMIN_TWO_FACTOR: 'true' })
const ADMIN_ROUTE = '/api/v1/admin/users'

async function signedUp(role: 'member' | 'admin' | 'owner') {
  const b = browser(baseURL)
  const email = `tf-admin-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`
  const res = await b.client.signUp.email({ name: 'Admin', email, password: PASSWORD })
  if (res.error) throw new Error(JSON.stringify(res.error))
  await app.db.updateTable('user').set({ role }).where('id', '=', res.data!.user.id).execute()
  await proveAddress(app, res.data!.user.id) // as a code typed in this session: it may set up two-factor
  const get = async () => {
    const res = await b.get(ADMIN_ROUTE)
    const body = (await res.json()) as { code?: string }
    return { status: res.status, code: body.code }
  }
  return { b, email, id: res.data!.user.id, get }
}

t.test('an admin without a second factor is refused; confirming two-factor lets this session through', async (t) => {
  const admin = await signedUp('admin')
  t.same(await admin.get(), { status: 403, code: 'TWO_FACTOR_REQUIRED' })
  const secret = secretOf((await admin.b.client.twoFactor.enable({ password: PASSWORD })).data!.totpURI)
  t.same(await admin.get(), { status: 403, code: 'TWO_FACTOR_REQUIRED' }, 'enabling alone is not a second factor')
  t.equal((await admin.b.client.twoFactor.verifyTotp({ code: codeAt(secret, clock.now()) })).error, null)
  t.same(await admin.get(), { status: 200, code: undefined })

  // A later sign-in passes through the code, and so does its session.
  await admin.b.client.signOut()
  t.same((await admin.b.client.signIn.email({ email: admin.email, password: PASSWORD })).data, {
    twoFactorRedirect: true,
    twoFactorMethods: ['totp'],
  })
  clock.advance(30_000)
  t.equal((await admin.b.client.twoFactor.verifyTotp({ code: codeAt(secret, clock.now()), trustDevice: true })).error, null)
  t.same(await admin.get(), { status: 200, code: undefined })

  // A trusted device counts: that browser passed a second factor earlier.
  await admin.b.client.signOut()
  const skipped = await admin.b.client.signIn.email({ email: admin.email, password: PASSWORD })
  t.ok((skipped.data as { user?: unknown }).user, 'signed in without a code')
  t.same(await admin.get(), { status: 200, code: undefined })

  // Disabling two-factor takes the mark off every session of the account.
  t.equal((await admin.b.client.twoFactor.disable({ password: PASSWORD })).error, null)
  t.same(await admin.get(), { status: 403, code: 'TWO_FACTOR_REQUIRED' })
})

t.test('an owner is refused the same way; a member is still FORBIDDEN, a member route unaffected', async (t) => {
  const owner = await signedUp('owner')
  t.same(await owner.get(), { status: 403, code: 'TWO_FACTOR_REQUIRED' })
  const member = await signedUp('member')
  t.same(await member.get(), { status: 403, code: 'FORBIDDEN' })
  t.equal((await owner.b.get('/api/v1/profile')).status, 200, 'only role routes ask for the second factor')
})

t.test('without REQUIRE_ADMIN_TWO_FACTOR an admin needs no second factor', async (t) => {
  const plain = await twoFactorApp()
  const b = browser(plain.baseURL)
  const email = `tf-plain-${process.pid}-${Date.now()}@example.com`
  const res = await b.client.signUp.email({ name: 'Admin', email, password: PASSWORD })
  await plain.app.db.updateTable('user').set({ role: 'admin' }).where('id', '=', res.data!.user.id).execute()
  t.equal((await b.get(ADMIN_ROUTE)).status, 200)
})
