// Races on one account (issue 26): every pair of state-changing auth operations, started together
// on a fresh account, must answer without a 5xx and leave the account in a state that holds:
//  - once a reset, a change of password, a deletion or a ban committed, no session that a sign-in
//    in the race started with the old password is alive (the credential epoch, sessions.ts);
//  - two-factor is on only with a confirmed setup;
//  - a deleted account has no session left; a banned one neither;
//  - the address is the old one, or the new one and verified.
// RACE_TRIALS=n runs every pair n times (default 1; the issue's note reports longer runs).
import type { LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { CodeStore } from '../../src/auth/links/codes.js'
import { issueToken } from '../../src/auth/links/verification.js'
import { hashToken } from '../../src/auth/core/tokens.js'
import { newId } from '../../src/shared/ids.js'
import {
  buildTestApp,
  call,
  proveAddress,
  sessionCookieOf,
  signUp,
  signUpWithRole,
  TEST_SECRET,
  WEB_ORIGIN,
  type TestUser,
} from '../helpers/app.js'
import { SoftAuthenticator } from '../helpers/authenticator.js'
import { credentialEpoch } from '../helpers/expect.js'
import { registerPasskey, registrationOf, signInWithPasskey } from '../helpers/passkey.js'
import { codeAt, secretOf } from '../helpers/two-factor.js'

// Many Argon2 operations in a row: under a loaded 2-core machine the file can pass tap's 120 s.
t.setTimeout(300_000)
const app = await buildTestApp({
  env: { RATE_LIMIT_PASSWORD_CHECKS_PER_MINUTE: '1000000', HASH_MAX_QUEUE: '10000', PHONE_SIGN_IN: 'true' },
})
const TRIALS = Number(process.env.RACE_TRIALS ?? 1)
const HOUR = 3_600_000
const NEW_PASSWORD = 'a new long passphrase'
const admin = await signUpWithRole(app, 'admin')

/** One account and what its operations need, made before the race starts. */
interface World {
  user: TestUser
  resetToken: string
  newEmail: string
  changeToken: string
  /** The pending two-factor setup's secret, when a race confirms one. */
  secret?: string
  /** Session cookies that sign-ins of the race obtained. */
  signIns: string[]
}

async function world(withSetup: boolean): Promise<World> {
  const user = await signUp(app)
  // Proven by its own session, so that its second factor may be set up (the take-back's races are below).
  await proveAddress(app, user.id)
  const expiresAt = new Date(Date.now() + HOUR)
  const resetToken = await issueToken(app.db, 'reset-password', user.id, { expiresAt })
  const newEmail = `moved-${newId()}@example.com`.toLowerCase()
  const changeToken = await issueToken(app.db, 'change-email-verification', user.id, {
    expiresAt,
    data: { email: user.email, newEmail, callbackURL: null },
  })
  const w: World = { user, resetToken, newEmail, changeToken, signIns: [] }
  if (withSetup) {
    const enabled = await call(app, 'POST', '/api/auth/two-factor/enable', {
      cookie: user.cookie,
      body: { password: user.password },
    })
    if (enabled.statusCode !== 200) throw new Error(`enable: ${enabled.statusCode} ${enabled.body}`)
    w.secret = secretOf(enabled.json().totpURI)
  }
  return w
}

type Op = (w: World) => Promise<LightMyRequestResponse>

const OPS: Record<string, Op> = {
  signIn: async (w) => {
    const res = await call(app, 'POST', '/api/auth/sign-in/email', { body: { email: w.user.email, password: w.user.password } })
    const cookie = sessionCookieOf(res)
    if (cookie) w.signIns.push(cookie)
    return res
  },
  reset: (w) => call(app, 'POST', '/api/auth/reset-password', { body: { token: w.resetToken, newPassword: NEW_PASSWORD } }),
  changePassword: (w) =>
    call(app, 'POST', '/api/auth/change-password', {
      cookie: w.user.cookie,
      body: { currentPassword: w.user.password, newPassword: NEW_PASSWORD },
    }),
  changeEmail: (w) => call(app, 'GET', `/api/auth/verify-email?token=${w.changeToken}`, { cookie: w.user.cookie }),
  enable2fa: (w) =>
    call(app, 'POST', '/api/auth/two-factor/enable', { cookie: w.user.cookie, body: { password: w.user.password } }),
  confirm2fa: (w) =>
    call(app, 'POST', '/api/auth/two-factor/verify-totp', {
      cookie: w.user.cookie,
      body: { code: w.secret ? codeAt(w.secret, new Date()) : '000000' },
    }),
  disable2fa: (w) =>
    call(app, 'POST', '/api/auth/two-factor/disable', { cookie: w.user.cookie, body: { password: w.user.password } }),
  delete: (w) => call(app, 'DELETE', '/api/v1/me', { cookie: w.user.cookie, body: { password: w.user.password } }),
  ban: (w) => call(app, 'POST', `/api/v1/admin/users/${w.user.id}/ban`, { cookie: admin.cookie, body: { reason: 'race' } }),
}

/** Ops that end every session of the account (a change of password keeps its own). */
const ENDS_SESSIONS = new Set(['reset', 'changePassword', 'delete', 'ban'])
const ok = (res: LightMyRequestResponse) => res.statusCode >= 200 && res.statusCode < 300

const alive = async (cookie: string) => (await call(app, 'GET', '/api/auth/get-session', { cookie })).json() !== null

async function checkInvariants(t: Test, w: World, done: Record<string, LightMyRequestResponse>, label: string) {
  for (const [name, res] of Object.entries(done)) {
    t.ok(res.statusCode < 500, `${label}: ${name} answered ${res.statusCode} ${res.statusCode >= 500 ? res.body : ''}`)
  }
  const ended = Object.keys(done).filter((name) => ENDS_SESSIONS.has(name) && ok(done[name]!))
  if (ended.length) {
    for (const cookie of w.signIns) t.notOk(await alive(cookie), `${label}: a racing sign-in's session died with ${ended}`)
  }
  const user = await app.db
    .selectFrom('user')
    .select(['email', 'email_verified', 'two_factor_enabled', 'banned'])
    .where('id', '=', w.user.id)
    .executeTakeFirst()
  const sessions = await app.db.selectFrom('session').select('id').where('user_id', '=', w.user.id).execute()
  if (!user) {
    t.equal(sessions.length, 0, `${label}: deleted, and no session left`)
    return
  }
  if (user.banned) t.equal(sessions.length, 0, `${label}: banned, and no session left`)
  const setup = await app.db.selectFrom('two_factor').select('verified').where('user_id', '=', w.user.id).executeTakeFirst()
  if (user.two_factor_enabled) t.equal(setup?.verified, true, `${label}: two-factor on only with a confirmed setup`)
  if (user.email !== w.user.email) {
    t.same([user.email, user.email_verified], [w.newEmail, true], `${label}: moved to the new address, verified`)
  }
}

const names = Object.keys(OPS)
t.test('every pair of state-changing operations on one account', async (t) => {
  let races = 0
  for (let trial = 0; trial < TRIALS; trial++) {
    for (let i = 0; i < names.length; i++) {
      for (let j = i; j < names.length; j++) {
        const [a, b] = [names[i]!, names[j]!]
        const w = await world(a === 'confirm2fa' || b === 'confirm2fa')
        const [ra, rb] = await Promise.all([OPS[a]!(w), OPS[b]!(w)])
        // Two of the same op: keep both answers.
        const done = a === b ? { [a]: ra, [`${b} (2nd)`]: rb } : { [a]: ra, [b]: rb }
        await checkInvariants(t, w, done, `${a} x ${b}`)
        races++
      }
    }
  }
  t.comment(`${races} races (${TRIALS} trial(s) of ${(names.length * (names.length + 1)) / 2} pairs)`)
})

t.test('a squatter who keeps signing in holds no session once the reset commits', async (t) => {
  for (let trial = 0; trial < Math.max(3, TRIALS); trial++) {
    const w = await world(false)
    // Sign-ins spread over the reset's own hashing and transaction.
    const signIns = Array.from({ length: 8 }, (_, k) => new Promise((r) => setTimeout(r, k * 15)).then(() => OPS.signIn!(w)))
    const reset = await OPS.reset!(w)
    const answers = await Promise.all(signIns)
    t.equal(reset.statusCode, 200)
    for (const res of answers) t.ok([200, 401].includes(res.statusCode), `sign-in answered ${res.statusCode}`)
    for (const cookie of w.signIns) t.notOk(await alive(cookie), 'no session with the old password outlives the reset')
    const left = await app.db.selectFrom('session').select('id').where('user_id', '=', w.user.id).execute()
    t.same(left, [], 'nothing left behind')
    // Each sign-in came from a new browser: none of them stays known, only the one that reset.
    const devices = await app.db.selectFrom('known_device').select('device_hash').where('user_id', '=', w.user.id).execute()
    t.same(devices.length, 1, "no racing sign-in's browser outlives the reset: only the resetting one is known")
  }
})

t.test('sign-ins racing a reset, a change of password, "this wasn\'t me" or a ban leave no stale known browser', async (t) => {
  const device = (res: LightMyRequestResponse) =>
    ([] as string[])
      .concat(res.headers['set-cookie'] ?? [])
      .find((c) => c.startsWith('insight.device='))
      ?.split(';', 1)[0]
  const known = async (userId: string) =>
    (await app.db.selectFrom('known_device').select('device_hash').where('user_id', '=', userId).execute()).length
  for (const ending of ['reset', 'changePassword', 'secure', 'ban'] as const) {
    for (let trial = 0; trial < Math.max(2, TRIALS); trial++) {
      const w = await world(false)
      const notice = await issueToken(app.db, 'security-notice', w.user.id, {
        expiresAt: new Date(Date.now() + HOUR),
        data: { event: 'new_device', at: new Date().toISOString(), email: w.user.email },
      })
      const endIt: Op =
        ending === 'secure'
          ? () =>
              app.inject({
                method: 'POST',
                url: '/api/auth/secure-account',
                headers: { origin: 'http://localhost:8787' },
                payload: { token: notice },
              })
          : OPS[ending]!
      // Sign-ins from new browsers spread over the ending's hashing and transaction.
      const signIns = Array.from({ length: 6 }, (_, k) => new Promise((r) => setTimeout(r, k * 15)).then(() => OPS.signIn!(w)))
      const ended = await endIt(w)
      const answers = await Promise.all(signIns)
      t.equal(ended.statusCode, 200, `${ending}: ${ended.body}`)
      // A sign-in that committed before the ending was forgotten by it, and its session ended; one
      // after it was refused (a ban, "this wasn't me") or gave a wrong password. Only the browser
      // that reset or changed the password stays known, and sign-ins whose session is still alive.
      let living = 0
      for (const res of answers) {
        const cookie = sessionCookieOf(res)
        if (!cookie) continue
        if (await alive(cookie)) living++
        else t.notOk(await knowsDevice(w.user.id, device(res)!), `${ending}: a browser whose session died with it is forgotten`)
      }
      const kept = ending === 'reset' || ending === 'changePassword' ? 1 : 0
      t.equal(await known(w.user.id), kept + living, `${ending}: no stale browser left known`)
    }
  }
})

/** Whether the account remembers an id of `cookie` (`insight.device=<signed value>`, as a response set it). */
async function knowsDevice(userId: string, cookie: string): Promise<boolean> {
  const value = decodeURIComponent(cookie.slice(cookie.indexOf('=') + 1))
  const ids = value.slice(0, value.lastIndexOf('.')).split('.')
  const rows = await app.db.selectFrom('known_device').select('device_hash').where('user_id', '=', userId).execute()
  return ids.some((id) => rows.some((r) => r.device_hash === hashToken(`${userId}:${id}`)))
}

t.test('passkey sign-ins racing a ban hold no session once it commits, nor those born before a reset', async (t) => {
  for (const name of ['reset', 'ban'] as const) {
    for (let trial = 0; trial < Math.max(3, TRIALS); trial++) {
      const w = await world(false)
      const authenticator = new SoftAuthenticator(WEB_ORIGIN)
      await registerPasskey(app, authenticator, w.user.cookie)
      // Sign-ins spread over the reset's hashing and transaction, or the ban's.
      const signIns = Array.from({ length: 6 }, (_, k) =>
        new Promise((r) => setTimeout(r, k * 15)).then(() => signInWithPasskey(app, authenticator)),
      )
      const began = new Date()
      const done = await OPS[name]!(w)
      const answers = await Promise.all(signIns)
      t.equal(done.statusCode, 200, `${name}: ${done.body}`)
      for (const res of answers) t.ok([200, 401, 403].includes(res.statusCode), `${name}: sign-in answered ${res.statusCode}`)
      if (name === 'ban') {
        for (const res of answers) {
          const cookie = sessionCookieOf(res)
          if (cookie) t.notOk(await alive(cookie), `${name}: no passkey session outlives it`)
        }
        const left = await app.db.selectFrom('session').select('id').where('user_id', '=', w.user.id).execute()
        t.same(left, [], `${name}: nothing left behind`)
        continue
      }
      // A reset keeps the passkey (a mailbox never takes a second factor away), so a passkey sign-in
      // that began after it committed is the owner's, and lives. One that began before it is stale
      // at its birth, or ended by the reset: no session born before the reset began is left.
      const left = await app.db.selectFrom('session').select(['id', 'created_at']).where('user_id', '=', w.user.id).execute()
      t.same(
        left.filter((s) => new Date(s.created_at) < began),
        [],
        `${name}: no session born before it outlives it`,
      )
    }
  }
})

t.test('a session is born only under the credential epoch it was checked with', async (t) => {
  const user = await signUp(app)
  const epoch = await credentialEpoch(app.db, user.id)
  const options = { rememberMe: true, ipAddress: null, userAgent: null }
  // A reset commits between the credential check and the session insert.
  const token = await issueToken(app.db, 'reset-password', user.id, { expiresAt: new Date(Date.now() + HOUR) })
  const reset = await call(app, 'POST', '/api/auth/reset-password', { body: { token, newPassword: NEW_PASSWORD } })
  t.equal(reset.statusCode, 200)
  await t.rejects(app.sessions.create({ userId: user.id, epoch }, options), { code: 'UNAUTHORIZED' }, 'stale: 401')
  const sessions = await app.db.selectFrom('session').select('id').where('user_id', '=', user.id).execute()
  t.same(sessions, [], 'and nothing inserted')

  // The user was deleted meanwhile: 401, not a foreign-key error.
  const gone = await signUp(app)
  const del = await call(app, 'DELETE', '/api/v1/me', { cookie: gone.cookie, body: { password: gone.password } })
  t.equal(del.statusCode, 204)
  await t.rejects(app.sessions.create({ userId: gone.id, epoch: 0 }, options), { code: 'UNAUTHORIZED' })
})

t.test('a sign-in by mailed code or link, or by phone, racing a ban or a deletion leaves no session', async (t) => {
  const codes = new CodeStore(TEST_SECRET)
  let phones = 0
  const mailboxSignIns: Record<string, Op> = {
    phone: async (w) => {
      // The account's verified number (src/auth/phone/), and a code sent to it.
      const phoneNumber = `+6299${String(process.pid % 100_000).padStart(5, '0')}${String(phones++).padStart(4, '0')}`
      await app.db
        .updateTable('user')
        .set({ phone_number: phoneNumber, phone_number_verified: true })
        .where('id', '=', w.user.id)
        .execute()
      const code = await codes.issue(app.db, 'phone-code', phoneNumber, w.user.id, new Date())
      return call(app, 'POST', '/api/auth/phone-number/verify', { body: { phoneNumber, code } })
    },
    code: async (w) => {
      const otp = await codes.issue(app.db, 'sign-in-code', w.user.email, w.user.id, new Date())
      return call(app, 'POST', '/api/auth/sign-in/email-otp', { body: { email: w.user.email, otp } })
    },
    link: async (w) => {
      const token = await issueToken(app.db, 'magic-link', w.user.id, {
        expiresAt: new Date(Date.now() + HOUR),
        data: { email: w.user.email, urls: { callbackURL: 'http://localhost:3000/' } },
      })
      return call(app, 'POST', '/api/auth/magic-link/verify', { body: { token } })
    },
  }
  for (let trial = 0; trial < Math.max(2, TRIALS); trial++) {
    for (const [way, signIn] of Object.entries(mailboxSignIns)) {
      for (const ending of ['ban', 'delete', 'reset'] as const) {
        const w = await world(false)
        const [signedIn, ended] = await Promise.all([signIn(w), OPS[ending]!(w)])
        const label = `${way} x ${ending}`
        t.ok(signedIn.statusCode < 500 && ended.statusCode < 500, `${label}: ${signedIn.statusCode} ${ended.statusCode}`)
        const cookie = sessionCookieOf(signedIn)
        // A ban or deletion refuses every later sign-in too; a reset (of an account nobody had
        // proven) and the mailbox proof take the account back in some order, and one of them wins.
        if (ending !== 'reset' && ok(ended) && cookie) t.notOk(await alive(cookie), `${label}: no session survives`)
        if (ending === 'reset') t.ok(ok(signedIn) || ok(ended), `${label}: one of the two proofs took the account`)
      }
    }
  }
})

t.test('a take-back racing a second factor set up by a session that proves the address meanwhile', async (t) => {
  // The account's ways in are unproven: the mailbox holder's code takes it back (ending every session),
  // while a session of the account proves the address with a code typed in it, then sets up TOTP or
  // a passkey. Whichever commits first, a take-back never leaves a second factor that a session it
  // ended set up, and a second factor set up first is never taken away.
  const codes = new CodeStore(TEST_SECRET)
  const setups: Record<string, (user: TestUser) => Promise<unknown>> = {
    totp: (user) => call(app, 'POST', '/api/auth/two-factor/enable', { cookie: user.cookie, body: { password: user.password } }),
    passkey: (user) => registerPasskey(app, new SoftAuthenticator(WEB_ORIGIN), user.cookie).catch((err: Error) => err),
  }
  for (let trial = 0; trial < Math.max(3, TRIALS); trial++) {
    for (const [factor, setUp] of Object.entries(setups)) {
      const user = await signUp(app)
      const signInCode = await codes.issue(app.db, 'sign-in-code', user.email, user.id, new Date())
      const verifyCode = await codes.issue(app.db, 'verify-email-code', user.email, user.id, new Date())
      const [signedIn, proven] = await Promise.all([
        call(app, 'POST', '/api/auth/sign-in/email-otp', { body: { email: user.email, otp: signInCode } }),
        call(app, 'POST', '/api/auth/email-otp/verify-email', {
          cookie: user.cookie,
          body: { email: user.email, otp: verifyCode },
        }).then(async (res) => ({ res, setup: await setUp(user) })),
      ])
      const label = `${factor}, trial ${trial}`
      t.ok(signedIn.statusCode < 500 && proven.res.statusCode < 500, `${label}: ${signedIn.statusCode} ${proven.res.statusCode}`)
      const takenBack = await app.db
        .selectFrom('audit_event')
        .select('id')
        .where('action', '=', 'auth.account_taken_back')
        .where('target_id', '=', user.id)
        .execute()
      const totp = await app.db.selectFrom('two_factor').select('user_id').where('user_id', '=', user.id).execute()
      const passkeys = await app.db.selectFrom('passkey').select('id').where('user_id', '=', user.id).execute()
      if (takenBack.length)
        t.same([totp, passkeys], [[], []], `${label}: taken back, and nothing the ended session set up is left`)
      else t.same(signedIn.json().user?.id ?? user.id, user.id, `${label}: not taken back`)
    }
  }
})

t.test('a mailbox sign-in racing a passkey registration is never born after the passkey', async (t) => {
  // The sign-in reads the account's second factors (none yet) after its code is used; the passkey
  // is stored meanwhile. A session born after that would be the mailbox alone beating a second
  // factor: adding the passkey raises the credential epoch, and the session is refused.
  const codes = new CodeStore(TEST_SECRET)
  for (let trial = 0; trial < Math.max(4, TRIALS); trial++) {
    const w = await world(false)
    const registration = await registrationOf(app, new SoftAuthenticator(WEB_ORIGIN), w.user.cookie)
    const otp = await codes.issue(app.db, 'sign-in-code', w.user.email, w.user.id, new Date())
    const [signedIn, registered] = await Promise.all([
      call(app, 'POST', '/api/auth/sign-in/email-otp', { body: { email: w.user.email, otp } }),
      call(app, 'POST', '/api/auth/passkey/verify-registration', {
        cookie: registration.cookie,
        body: { response: registration.response },
      }),
    ])
    const label = `trial ${trial}: ${signedIn.statusCode} ${registered.statusCode}`
    t.ok(signedIn.statusCode < 500 && registered.statusCode < 500, label)
    t.equal(registered.statusCode, 200, `${label}: the passkey is stored`)
    const passkey = await app.db
      .selectFrom('passkey')
      .select('created_at')
      .where('user_id', '=', w.user.id)
      .executeTakeFirstOrThrow()
    const cookie = sessionCookieOf(signedIn)
    if (!cookie) {
      t.ok([200, 401].includes(signedIn.statusCode), `${label}: the second step, or a sign-in that came too late`)
      continue
    }
    const born = await app.db
      .selectFrom('session')
      .select('created_at')
      .where('user_id', '=', w.user.id)
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow()
    t.ok(born.created_at.getTime() <= passkey.created_at.getTime(), `${label}: the session was born before the passkey`)
  }
})

t.test(
  'a second factor added by a session racing its sign-out or revocation is stored only while the session lived',
  async (t) => {
    // The factor's transaction reads the session's proof of the address under the session row's lock:
    // a sign-out or a revocation that committed first leaves it nothing to add (401, nothing stored);
    // one that waits ends the session after the factor is in. Either way the answer tells the truth.
    const adds: Record<string, (w: World) => Promise<() => Promise<LightMyRequestResponse>>> = {
      totp: async (w) => () =>
        call(app, 'POST', '/api/auth/two-factor/enable', { cookie: w.user.cookie, body: { password: w.user.password } }),
      passkey: async (w) => {
        const registration = await registrationOf(app, new SoftAuthenticator(WEB_ORIGIN), w.user.cookie)
        return () =>
          call(app, 'POST', '/api/auth/passkey/verify-registration', {
            cookie: registration.cookie,
            body: { response: registration.response },
          })
      },
    }
    const ends: Record<string, (w: World) => Promise<() => Promise<LightMyRequestResponse>>> = {
      signOut: async (w) => () => call(app, 'POST', '/api/auth/sign-out', { cookie: w.user.cookie, body: {} }),
      revoke: async (w) => {
        // From another session of the account (a password sign-in: it proves nothing, and needs to).
        const other = sessionCookieOf(await OPS.signIn!(w))!
        const { id } = (await call(app, 'GET', '/api/auth/get-session', { cookie: w.user.cookie })).json().session
        return () => call(app, 'POST', '/api/auth/revoke-session', { cookie: other, body: { id } })
      },
    }
    for (let trial = 0; trial < Math.max(3, TRIALS); trial++) {
      for (const [factor, prepareAdd] of Object.entries(adds)) {
        for (const [end, prepareEnd] of Object.entries(ends)) {
          const w = await world(false)
          const [add, ending] = [await prepareAdd(w), await prepareEnd(w)]
          // The end starts a little later each trial, so that each side wins some.
          const [added, ended] = await Promise.all([add(), new Promise((r) => setTimeout(r, trial * 40)).then(ending)])
          const label = `${factor} x ${end}, trial ${trial}: ${added.statusCode} ${ended.statusCode}`
          t.equal(ended.statusCode, 200, `${label}: the session ends`)
          t.ok([200, 401].includes(added.statusCode), `${label}: added, or refused for a session already ended`)
          const stored =
            factor === 'totp'
              ? await app.db.selectFrom('two_factor').select('user_id').where('user_id', '=', w.user.id).execute()
              : await app.db.selectFrom('passkey').select('id').where('user_id', '=', w.user.id).execute()
          t.equal(stored.length, added.statusCode === 200 ? 1 : 0, `${label}: stored exactly when it answered 200`)
          t.notOk(await alive(w.user.cookie), `${label}: the session is gone`)
        }
      }
    }
  },
)

t.test('two links of one account opened at once serialise: one changes the address, none fails', async (t) => {
  for (let trial = 0; trial < Math.max(3, TRIALS); trial++) {
    const w = await world(false)
    const other = `other-${newId()}@example.com`.toLowerCase()
    const second = await issueToken(app.db, 'change-email-verification', w.user.id, {
      expiresAt: new Date(Date.now() + HOUR),
      data: { email: w.user.email, newEmail: other, callbackURL: null },
    })
    const [a, b] = await Promise.all([
      OPS.changeEmail!(w),
      call(app, 'GET', `/api/auth/verify-email?token=${second}`, { cookie: w.user.cookie }),
    ])
    t.same([a.statusCode, b.statusCode].sort(), [200, 400], 'one took, the other found its link ended')
    const { email } = await app.db.selectFrom('user').select('email').where('id', '=', w.user.id).executeTakeFirstOrThrow()
    t.ok([w.newEmail, other].includes(email))
  }
})

t.test('two-factor enable racing the confirmation never leaves it on with an unconfirmed secret', async (t) => {
  for (let trial = 0; trial < Math.max(5, TRIALS); trial++) {
    const w = await world(true)
    const [enable, confirm] = await Promise.all([OPS.enable2fa!(w), OPS.confirm2fa!(w)])
    t.ok(enable.statusCode < 500 && confirm.statusCode < 500)
    const user = await app.db
      .selectFrom('user')
      .select('two_factor_enabled')
      .where('id', '=', w.user.id)
      .executeTakeFirstOrThrow()
    if (!user.two_factor_enabled) continue
    // On: the secret that was confirmed is the one stored, so its codes still sign in.
    t.equal(enable.statusCode, 400, 'the confirmation won: enable refused')
    const setup = await app.db
      .selectFrom('two_factor')
      .select('verified')
      .where('user_id', '=', w.user.id)
      .executeTakeFirstOrThrow()
    t.equal(setup.verified, true)
    const session = await call(app, 'POST', '/api/auth/two-factor/verify-totp', {
      cookie: w.user.cookie,
      body: { code: codeAt(w.secret!, new Date(), 1) },
    })
    t.equal(session.statusCode, 200, 'a later code of the confirmed secret works')
  }
})

t.test('an admin cannot change their own plan, as for their own role', async (t) => {
  const me = await signUpWithRole(app, 'admin')
  for (const [path, body] of [
    ['plan', { plan: 'premium' }],
    ['premium-plus', {}],
  ] as const) {
    const res = await call(app, 'POST', `/api/v1/admin/users/${me.id}/${path}`, { cookie: me.cookie, body })
    t.same([res.statusCode, res.json().code], [403, 'FORBIDDEN'], path)
  }
  const row = await app.db.selectFrom('user').select('plan').where('id', '=', me.id).executeTakeFirstOrThrow()
  t.equal(row.plan, 'free')
  const other = await signUp(app)
  const res = await call(app, 'POST', `/api/v1/admin/users/${other.id}/plan`, { cookie: me.cookie, body: { plan: 'premium' } })
  t.equal(res.statusCode, 200, "another user's plan still changes")
})
