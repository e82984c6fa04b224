// What our mails may say: nothing a sender chose. A name is text anyone can type at sign-up, and the
// verification, reset and change-of-address mails go to addresses nobody has proven; a name such as
// "log in at https://evil.example/login" must never become a line, or the first link, of an
// official mail. And a name refuses Unicode format characters (bidirectional controls included),
// which reorder or hide what a reader sees, with the one 400 of a failed schema.
import t, { type Test } from 'tap'
import { newId } from '../../src/shared/ids.js'
import { buildTestApp, call, signUp, type TestUser } from '../helpers/app.js'
import { linkIn, pressApprove, type ReceivedMail, startSmtpServer } from '../helpers/smtp.js'

const smtp = await startSmtpServer()
const app = await buildTestApp({ env: { SMTP_URL: smtp.url } })
await app.listen({ port: 0, host: '127.0.0.1' })

const HOSTILE_NAME = 'Log in at https://evil.example/login now'
const fresh = (what: string) => `${what}-${newId()}@example.com`.toLowerCase()
/** Opens a mailed link; with `cookie`, in a browser signed in to that session. */
const open = (link: URL, cookie?: string) =>
  app.inject({ method: 'GET', url: `${link.pathname}${link.search}`, headers: cookie ? { cookie } : {} })
const markVerified = (id: string) => app.db.updateTable('user').set({ email_verified: true }).where('id', '=', id).execute()

/** The mail carries no part of the hostile name, and its first link is this service's or the web front end's. */
function saysNothingOfTheSender(t: Test, mail: ReceivedMail, what: string): void {
  t.notMatch(mail.text, /evil|Log in at/i, `${what}: no part of the name in the text`)
  t.notMatch(mail.subject, /evil|Log in at/i, `${what}: nor in the subject`)
  const first = /https?:\/\/\S+/.exec(mail.text)?.[0]
  if (first) t.match(first, /^http:\/\/localhost:(8787|3000)\//, `${what}: the first link is ours`)
}

/** A printable label: the TAP stream must not carry the raw format characters. */
const printable = (s: string) => s.replace(/[^\x20-\x7e]/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`)

const signUpNamed = (email = fresh('named')): Promise<TestUser> => signUp(app, { email, name: HOSTILE_NAME })

t.test('no mail carries the name its account was given', async (t) => {
  t.test('verification, to an address nobody has proven', async (t) => {
    const user = await signUpNamed()
    t.equal((await call(app, 'POST', '/api/auth/send-verification-email', { body: { email: user.email } })).statusCode, 200)
    const mail = await smtp.inbox.next(user.email)
    t.equal(mail.subject, 'Verify your email address')
    saysNothingOfTheSender(t, mail, 'verification')
    t.equal(linkIn(mail).pathname, '/api/auth/verify-email')
  })

  t.test('password reset, to an unverified and to a verified account', async (t) => {
    for (const verified of [false, true]) {
      const user = await signUpNamed()
      if (verified) await markVerified(user.id)
      await call(app, 'POST', '/api/auth/request-password-reset', { body: { email: user.email } })
      const mail = await smtp.inbox.next(user.email)
      t.equal(mail.subject, 'Reset your password')
      saysNothingOfTheSender(t, mail, `reset (verified: ${verified})`)
      t.equal(linkIn(mail).pathname, '/reset-password')
    }
  })

  t.test('change of address: the new address, the approval and the notice to the old one', async (t) => {
    // Unverified: the new address is mailed at once, and it is nobody's proven address.
    const unverified = await signUpNamed()
    const target = fresh('target')
    await call(app, 'POST', '/api/auth/change-email', { cookie: unverified.cookie, body: { newEmail: target } })
    await app.settled()
    const confirm = await smtp.inbox.next(target)
    t.equal(confirm.subject, 'Confirm your new email address')
    saysNothingOfTheSender(t, confirm, 'confirmation to the new address')
    t.notMatch(confirm.text, unverified.email, 'nor the address of the account that asked')
    t.equal((await open(linkIn(confirm), unverified.cookie)).statusCode, 302, 'the link works')
    saysNothingOfTheSender(t, await smtp.inbox.next(unverified.email), 'notice to the old address')

    // Verified: the current address approves first.
    const verified = await signUpNamed()
    await markVerified(verified.id)
    const next = fresh('next')
    await call(app, 'POST', '/api/auth/change-email', { cookie: verified.cookie, body: { newEmail: next } })
    await app.settled()
    const approval = await smtp.inbox.next(verified.email)
    t.equal(approval.subject, 'Approve the change of your email address')
    saysNothingOfTheSender(t, approval, 'approval')
    t.match(approval.text, next, 'the approval names the address asked for: its owner must judge it')
    t.equal((await pressApprove(app, approval)).statusCode, 200, 'the link works')
    saysNothingOfTheSender(t, await smtp.inbox.next(next), 'confirmation after the approval')
  })

  t.test('the deletion link of an account without a password', async (t) => {
    const user = await signUpNamed()
    await app.db.deleteFrom('account').where('user_id', '=', user.id).execute()
    const res = await call(app, 'POST', '/api/auth/delete-user', { cookie: user.cookie, body: {} })
    t.equal(res.statusCode, 200, res.body)
    const mail = await smtp.inbox.next(user.email)
    t.equal(mail.subject, 'Confirm the deletion of your account')
    saysNothingOfTheSender(t, mail, 'deletion')
  })
})

// Format characters (Unicode category Cf): the bidirectional embeddings, overrides and isolates,
// the marks, the Arabic letter mark, the soft hyphen, the byte-order mark, invisible operators;
// and the line and paragraph separators and C1 controls, which break a line as CR and LF do.
const REFUSED_NAMES = [
  'Eve\u202Egnp.exe', // RIGHT-TO-LEFT OVERRIDE
  '\u202AEve', // LEFT-TO-RIGHT EMBEDDING
  'Eve\u202C', // POP DIRECTIONAL FORMATTING
  '\u2066Eve\u2069', // LEFT-TO-RIGHT ISOLATE .. POP DIRECTIONAL ISOLATE
  'Eve\u2067', // RIGHT-TO-LEFT ISOLATE
  'Eve\u2068', // FIRST STRONG ISOLATE
  'Eve\u200E', // LEFT-TO-RIGHT MARK
  'Eve\u200F', // RIGHT-TO-LEFT MARK
  'Eve\u061C', // ARABIC LETTER MARK
  'E\u00ADve', // SOFT HYPHEN
  'E\uFEFFve', // BYTE ORDER MARK (inside: trim takes it off the ends)
  'E\u200Bve', // ZERO WIDTH SPACE
  'E\u2060ve', // WORD JOINER
  'E\u2062ve', // INVISIBLE TIMES
  'Eve\u{E0041}', // TAG LATIN CAPITAL LETTER A
  'Eve\u2028Admin', // LINE SEPARATOR
  'Eve\u2029Admin', // PARAGRAPH SEPARATOR
  'Eve\u0085Admin', // NEXT LINE (C1)
]

t.test('a name refuses format and bidirectional control characters, wherever it is set', async (t) => {
  const user = await signUp(app)
  const ways = {
    'sign-up': (name: string) =>
      call(app, 'POST', '/api/auth/sign-up/email', {
        body: { name, email: fresh('bidi'), password: 'correct horse battery staple' },
      }),
    'update-user': (name: string) => call(app, 'POST', '/api/auth/update-user', { cookie: user.cookie, body: { name } }),
    'profile name': (name: string) => call(app, 'PATCH', '/api/v1/profile', { cookie: user.cookie, body: { name } }),
    'profile birth place': (name: string) =>
      call(app, 'PATCH', '/api/v1/profile', { cookie: user.cookie, body: { birthPlace: { name, latitude: 0, longitude: 0 } } }),
  }
  for (const [way, send] of Object.entries(ways)) {
    for (const name of REFUSED_NAMES) {
      const res = await send(name)
      t.same([res.statusCode, res.json().code], [400, 'VALIDATION_ERROR'], `${way}: ${printable(name)}`)
    }
  }
  const refused = await call(app, 'POST', '/api/auth/update-user', { cookie: user.cookie, body: { name: 'Eve\u202Egnp' } })
  t.match(refused.json(), { code: 'VALIDATION_ERROR', status: 400, data: { issues: [{ path: 'body.name' }] } })
  const row = await app.db.selectFrom('user').select('name').where('id', '=', user.id).executeTakeFirstOrThrow()
  t.equal(row.name, 'Test User', 'no refused name was stored')
})

t.test('names in every script still pass, with the joiners their spelling needs', async (t) => {
  const user = await signUp(app)
  const accepted = [
    'Sari Wulandari',
    'José Ñúñez',
    'محمد عبد الله', // Arabic, right-to-left without any control character
    'שרה כהן', // Hebrew
    'می\u200Cخواهم', // Persian: ZERO WIDTH NON-JOINER is part of its spelling
    'क्\u200Dष', // Devanagari: ZERO WIDTH JOINER selects the half form
    '👩\u200D💻 Ana', // an emoji sequence joined by ZWJ
    '李小龍',
  ]
  for (const name of accepted) {
    const res = await call(app, 'POST', '/api/auth/update-user', { cookie: user.cookie, body: { name } })
    t.equal(res.statusCode, 200, `${printable(name)}: ${res.body}`)
  }
  const signedUp = await signUp(app, { name: 'فاطمه\u200Cزاده' })
  t.ok(signedUp.id, 'sign-up accepts a Persian name with its non-joiner')
})
