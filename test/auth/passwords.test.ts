// Password sign-up and sign-in: hashing, the previous system's hashes, no enumeration, no
// mass assignment, and the bounded hashing queue.
import { createHash, randomBytes, scryptSync } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import bcrypt from 'bcryptjs'
import t from 'tap'
import { HASH_THREAD_NICE, HashPool } from '../../src/auth/password/hash-pool.js'
import { ARGON2, scryptFromBetterAuth } from '../../src/auth/password/password.js'
import { newId } from '../../src/shared/ids.js'
import { buildTestApp, call, signUp, uniqueEmail } from '../helpers/app.js'
import { accountsOf } from '../helpers/expect.js'

// Many Argon2 operations in a row: under a loaded 2-core machine the file can pass tap's 120 s.
t.setTimeout(300_000)
const app = await buildTestApp()
const PASSWORD = 'correct horse battery staple'

const signIn = (email: string, password: string) => call(app, 'POST', '/api/auth/sign-in/email', { body: { email, password } })
const storedHash = async (userId: string) =>
  (await accountsOf(app.db, userId, 'credential').executeTakeFirstOrThrow()).password_hash!

/** A user as the import would leave them: the given stored hash on their credential account. */
async function importedUser(passwordHash: string, options: { resetRequired?: boolean } = {}) {
  const id = newId()
  const email = uniqueEmail('imported')
  await app.db
    .insertInto('user')
    .values({ id, name: 'Imported', email, image: null, password_reset_required: options.resetRequired ?? false })
    .execute()
  await app.db
    .insertInto('account')
    .values({ id: newId(), user_id: id, provider_id: 'credential', account_id: id, password_hash: passwordHash })
    .execute()
  return { id, email }
}

t.test('two users with the same password have different Argon2id hashes', async (t) => {
  const a = await signUp(app, { password: PASSWORD })
  const b = await signUp(app, { password: PASSWORD })
  const [ha, hb] = [await storedHash(a.id), await storedHash(b.id)]
  t.match(ha, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
  t.not(ha, hb)
  t.notOk(ha.includes(PASSWORD))
})

t.test('a prefix, an extension or a case change of the password does not sign in', async (t) => {
  const user = await signUp(app, { password: PASSWORD })
  for (const wrong of [PASSWORD.slice(0, -1), PASSWORD.slice(0, 8), `${PASSWORD}x`, PASSWORD.toUpperCase()]) {
    t.equal((await signIn(user.email, wrong)).statusCode, 401, JSON.stringify(wrong))
  }
  t.equal((await signIn(user.email, PASSWORD)).statusCode, 200)
})

t.test('long Unicode passwords are hashed whole, never truncated', async (t) => {
  const long = 'ü'.repeat(100) + '🔑'.repeat(14) // 128 UTF-16 code units
  const user = await signUp(app, { password: long })
  t.equal((await signIn(user.email, long)).statusCode, 200)
  t.equal((await signIn(user.email, long.slice(0, -2))).statusCode, 401)
})

t.test('unknown email, wrong password and an account without a password answer identically', async (t) => {
  const user = await signUp(app)
  const noPassword = newId()
  const noPasswordEmail = uniqueEmail('idp-only')
  await app.db.insertInto('user').values({ id: noPassword, name: 'IdP only', email: noPasswordEmail, image: null }).execute()
  const unknown = await signIn(uniqueEmail('nobody'), PASSWORD)
  const wrong = await signIn(user.email, 'not the password at all')
  const none = await signIn(noPasswordEmail, PASSWORD)
  t.equal(unknown.statusCode, 401)
  t.equal(wrong.statusCode, unknown.statusCode)
  t.equal(none.statusCode, unknown.statusCode)
  t.equal(wrong.body, unknown.body)
  t.equal(none.body, unknown.body)
  t.same(unknown.json(), { code: 'INVALID_EMAIL_OR_PASSWORD', status: 401, message: 'Invalid email or password', defined: false })
  t.notOk(unknown.headers['set-cookie'])
})

t.test('role, plan or emailVerified cannot be set through sign-up', async (t) => {
  for (const extra of [
    { role: 'admin' },
    { role: 'owner' },
    { plan: 'premium_plus' },
    { emailVerified: true },
    { id: 'chosen' },
  ]) {
    const email = uniqueEmail('mass')
    const res = await call(app, 'POST', '/api/auth/sign-up/email', {
      body: { name: 'Mass', email, password: PASSWORD, ...extra },
    })
    t.equal(res.statusCode, 400, JSON.stringify(extra))
    t.equal(res.json().code, 'VALIDATION_ERROR')
    t.notOk(await app.db.selectFrom('user').select('id').where('email', '=', email).executeTakeFirst(), 'no account was made')
  }
})

t.test('sign-up validates its input', async (t) => {
  const bad = [
    { name: 'X', email: 'not-an-email', password: PASSWORD },
    { name: 'X', email: uniqueEmail(), password: 'short7!' },
    { name: 'X', email: uniqueEmail(), password: 'x'.repeat(129) },
    { name: '', email: uniqueEmail(), password: PASSWORD },
    { name: 'A\ud800B', email: uniqueEmail(), password: PASSWORD },
    { name: 'Tab\there', email: uniqueEmail(), password: PASSWORD },
    { email: uniqueEmail(), password: PASSWORD },
  ]
  for (const body of bad) {
    const res = await call(app, 'POST', '/api/auth/sign-up/email', { body })
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }
})

t.test('an email already registered is 422 USER_ALREADY_EXISTS, whatever its case', async (t) => {
  const user = await signUp(app)
  const res = await call(app, 'POST', '/api/auth/sign-up/email', {
    body: { name: 'Again', email: user.email.toUpperCase(), password: PASSWORD },
  })
  t.equal(res.statusCode, 422)
  t.match(res.json(), { code: 'USER_ALREADY_EXISTS', status: 422 })
  t.equal((await signIn(user.email.toUpperCase(), PASSWORD)).statusCode, 200, 'sign-in is case-insensitive on the email')
})

t.test("a scrypt hash in better-auth's format signs in and is replaced by Argon2id", async (t) => {
  // Exactly as better-auth 1.6 hashes: the hex salt string itself is the salt.
  const salt = randomBytes(16).toString('hex')
  const key = scryptSync(PASSWORD.normalize('NFKC'), salt, 64, { N: 16384, r: 16, p: 1, maxmem: 128 * 16384 * 16 * 2 })
  const stored = scryptFromBetterAuth(`${salt}:${key.toString('hex')}`)
  t.ok(stored)
  const user = await importedUser(stored!)
  t.equal((await signIn(user.email, 'wrong password here')).statusCode, 401)
  t.equal(await storedHash(user.id), stored, 'a failed sign-in leaves the hash alone')
  const res = await signIn(user.email, PASSWORD)
  t.equal(res.statusCode, 200)
  t.match(await storedHash(user.id), /^\$argon2id\$/)
  t.equal((await signIn(user.email, PASSWORD)).statusCode, 200, 'the new hash verifies')
})

t.test('a bcrypt hash signs in and is upgraded', async (t) => {
  const user = await importedUser(bcrypt.hashSync(PASSWORD, 8))
  t.equal((await signIn(user.email, `${PASSWORD}!`)).statusCode, 401)
  t.equal((await signIn(user.email, PASSWORD)).statusCode, 200)
  t.match(await storedHash(user.id), /^\$argon2id\$/)
})

t.test('a wrapped weak digest answers PASSWORD_RESET_REQUIRED only to the right password', async (t) => {
  const user = await importedUser(await app.hasher.wrapWeakDigest('md5', createHash('md5').update(PASSWORD).digest('hex')))
  const wrong = await signIn(user.email, 'a wrong guess at it')
  t.equal(wrong.statusCode, 401)
  const right = await signIn(user.email, PASSWORD)
  t.equal(right.statusCode, 403)
  t.match(right.json(), { code: 'PASSWORD_RESET_REQUIRED', status: 403 })
  t.notOk(right.headers['set-cookie'], 'no session')
})

t.test('the hash pool refuses work past its queue with 503 and Retry-After, and finishes the rest', async (t) => {
  const pool = new HashPool(1, 1)
  t.teardown(() => pool.close())
  t.equal(pool.capacity, 2, 'one worker holds the running hash and the next one')
  const accepted = [
    pool.argon2Hash('one password', ARGON2),
    pool.argon2Hash('two password', ARGON2),
    pool.argon2Hash('three password', ARGON2),
  ]
  t.equal(pool.inFlight, 3)
  await t.rejects(pool.argon2Hash('four password', ARGON2), { status: 503, code: 'SERVICE_UNAVAILABLE', retryAfter: 2 })
  const hashes = await Promise.all(accepted)
  t.ok(hashes.every((h) => h.startsWith('$argon2id$')))
  t.equal(await pool.argon2Verify(hashes[2]!, 'three password'), true)
  t.equal(await pool.argon2Verify(hashes[2]!, 'two password'), false)
  t.equal(pool.inFlight, 0)
})

t.test('the hash queue takes turns by key, and a full queue sheds the key with the most waiting', async (t) => {
  const pool = new HashPool(1, 4)
  t.teardown(() => pool.close())
  const finished: string[] = []
  const hash = (name: string, key: string) =>
    pool.argon2Hash(name, ARGON2, key).then(
      () => void finished.push(name),
      (err: { status?: number }) => void finished.push(`${name}:${err.status}`),
    )
  // a1 runs, a2 waits in the worker's inbox, a3..a6 fill the queue.
  const flood = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6'].map((name) => hash(name, 'flooding address'))
  const refused = hash('a7', 'flooding address')
  const other = hash('b1', 'other address')
  await Promise.all([...flood, refused, other])
  t.same(
    finished.filter((f) => f.includes(':')),
    ['a7:503', 'a6:503'],
    'a7 is refused (its key has the most waiting); b1 gets in, the newest of the flood making room',
  )
  t.same(
    finished.filter((f) => !f.includes(':')),
    ['a1', 'a2', 'a3', 'b1', 'a4', 'a5'],
    'b1 waits for one turn of the flood, not for all of it',
  )
})

t.test('closing the hash pool fails waiting work with 503 and refuses new work', async (t) => {
  const pool = new HashPool(1, 8)
  const running = pool.argon2Hash('first password', ARGON2)
  const queued = [pool.argon2Hash('second password', ARGON2), pool.argon2Hash('third password', ARGON2)]
  const outcomes = Promise.allSettled([running, ...queued])
  await pool.close()
  for (const outcome of await outcomes)
    t.match(outcome, { status: 'rejected', reason: { status: 503, code: 'SERVICE_UNAVAILABLE' } })
  await t.rejects(pool.argon2Hash('later password', ARGON2), { status: 503, code: 'SERVICE_UNAVAILABLE' })
})

t.test('a malformed stored hash fails the verification instead of crashing the worker', async (t) => {
  const pool = new HashPool(1, 1)
  t.teardown(() => pool.close())
  await t.rejects(pool.argon2Verify('$argon2id$v=19$m=19456,t=2,p=1$not-base64', 'password'))
  t.match(await pool.argon2Hash('still works', ARGON2), /^\$argon2id\$/, 'the worker still answers')
})

/** The nice value of every thread of this process, by thread id (Linux). */
function threadNiceness(): Map<number, number> {
  const nice = new Map<number, number>()
  for (const tid of readdirSync('/proc/self/task')) {
    // Fields after the parenthesised name: state is field 3, nice field 19.
    const fields = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    nice.set(Number(tid), Number(fields[16]))
  }
  return nice
}

t.test(
  "hashing runs on worker threads below the event loop's priority",
  { skip: process.platform !== 'linux' && 'thread priorities are read from /proc (Linux only)' },
  async (t) => {
    const before = [...threadNiceness().values()].filter((n) => n === HASH_THREAD_NICE).length
    const pool = new HashPool(2, 0)
    t.teardown(() => pool.close())
    await Promise.all([
      pool.argon2Hash('a password', ARGON2),
      pool.argon2Hash('b password', ARGON2),
      pool.argon2Hash('c password', ARGON2),
    ])
    const nice = threadNiceness()
    t.equal([...nice.values()].filter((n) => n === HASH_THREAD_NICE).length - before, 2, 'one lowered thread per worker')
    t.equal(nice.get(process.pid), 0, 'the event loop keeps its priority')
  },
)

t.test('a flood of sign-ins past the hash queue gets 503 with Retry-After, never a 5xx otherwise', async (t) => {
  const small = await buildTestApp({ env: { HASH_MAX_CONCURRENCY: '1', HASH_MAX_QUEUE: '0' } })
  // Eight accounts: one account's second sign-in at once is a 429 (hash-budgets.test.ts), not queued.
  const users = []
  for (let i = 0; i < 8; i++) users.push(await signUp(small))
  const results = await Promise.all(
    users.map((user) => call(small, 'POST', '/api/auth/sign-in/email', { body: { email: user.email, password: PASSWORD } })),
  )
  const refused = results.filter((r) => r.statusCode === 503)
  t.ok(refused.length > 0, 'some were refused')
  t.ok(
    results.some((r) => r.statusCode === 200),
    'some got through',
  )
  t.ok(results.every((r) => r.statusCode === 200 || r.statusCode === 503))
  for (const r of refused) {
    t.match(r.json(), { code: 'SERVICE_UNAVAILABLE', status: 503 })
    t.ok(Number(r.headers['retry-after']) > 0)
  }
})
