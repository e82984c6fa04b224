// What the import decides from the file alone: row validation, password formats, duplicates,
// unknown keys; and how it shows progress.
import t from 'tap'
import { ImportFileError, parseDocument } from '../../src/import/parse.js'
import { progressOn, type Progress } from '../../src/import/progress.js'

const user = (over: Record<string, unknown>) => ({ id: 'u', email: 'u@example.id', name: 'U', ...over })

t.test('each bad password is rejected with a reason that never repeats the hash', async (t) => {
  const doc = parseDocument({
    users: [
      user({ id: 'a1', email: 'a1@example.id', password: { algorithm: 'argon2', hash: '$argon2id$not-a-phc' } }),
      user({ id: 'a2', email: 'a2@example.id', password: { algorithm: 'bcrypt', hash: '$2x$10$abc' } }),
      user({ id: 'a3', email: 'a3@example.id', password: { algorithm: 'md5', hash: 'abc123' } }),
      user({ id: 'a4', email: 'a4@example.id', password: { algorithm: 'sha256', hash: 'g'.repeat(64) } }),
      user({ id: 'a5', email: 'a5@example.id', password: { algorithm: 'sha1' } }),
      user({ id: 'a6', email: 'a6@example.id', password: { algorithm: 'plain', hash: 'x'.repeat(1025) } }),
      user({ id: 'a7', email: 'a7@example.id', password: { algorithm: 'md5', hash: 'ABCDEF0123456789ABCDEF0123456789' } }),
      user({ id: 'a8', email: 'a8@example.id', password: null }),
    ],
  })
  t.same(
    doc.rejected.map((r) => [r.id, r.reason]),
    [
      ['a1', 'password.hash is not an Argon2 PHC string'],
      ['a2', 'password.hash is not a bcrypt hash ($2a$/$2b$/$2y$)'],
      ['a3', 'password.hash is not a md5 hex digest (32 hex characters)'],
      ['a4', 'password.hash is not a sha256 hex digest (64 hex characters)'],
      ['a5', 'password.hash is missing for algorithm "sha1"'],
      ['a6', 'plain password longer than 1024 characters'],
    ],
  )
  t.same(
    doc.users.map((u) => [u.key, u.algorithm]),
    [
      ['a7', 'md5'],
      ['a8', 'none'],
    ],
  )
  t.same(
    doc.users[0]!.credential,
    { kind: 'weak', algorithm: 'md5', digest: 'abcdef0123456789abcdef0123456789' },
    'an uppercase digest is the same digest',
  )
})

t.test('rows that are not objects, or lack what they need, are rejected with their position', async (t) => {
  const doc = parseDocument({
    users: [null, 'u_1', user({ id: '' }), user({ email: 'x@example.id', createdAt: '2024-03-01' })],
    accounts: [{ userId: 'u', providerId: 'idp' }],
    journalEntries: [{ id: 'j', userId: 'u', content: '', mood: 2.5 }],
    consents: [{ userId: 'u', type: 'terms', version: 'v'.repeat(65), granted: 'yes' }],
  })
  t.same(
    doc.rejected.map((r) => `${r.section}[${r.index}]: ${r.reason}`),
    [
      'users[0]: not a JSON object',
      'users[1]: not a JSON object',
      'users[2]: id: must not be empty',
      'users[3]: createdAt: not an ISO-8601 date-time with a time zone',
      'accounts[0]: accountId: Invalid input: expected string, received undefined',
      'journalEntries[0]: content: must not be empty; mood: not an integer',
      'consents[0]: version: longer than 64 characters; granted: Invalid input: expected boolean, received string',
    ],
  )
})

t.test('duplicate ids are all rejected, in every section', async (t) => {
  const entry = { userId: 'u', content: 'c', mood: 3 }
  const doc = parseDocument({
    users: [
      user({ id: 'same', email: 'one@example.id' }),
      user({ id: 'same', email: 'two@example.id' }),
      user({ id: 'other', email: 'o@example.id' }),
    ],
    journalEntries: [
      { id: 'j', ...entry },
      { id: 'j', ...entry },
    ],
    consents: [
      { userId: 'u', type: 'terms', version: '1', granted: true, createdAt: '2024-01-01T00:00:00Z' },
      { userId: 'u', type: 'terms', version: '1', granted: false, createdAt: '2024-01-01T00:00:00.000Z' },
      { id: 'explicit', userId: 'u', type: 'terms', version: '1', granted: true },
    ],
  })
  t.same(
    doc.rejected.map((r) => `${r.section}[${r.index}]: ${r.reason}`),
    [
      'users[0]: duplicate id "same" (rows 0, 1)',
      'users[1]: duplicate id "same" (rows 0, 1)',
      'journalEntries[0]: duplicate id "j" (rows 0, 1)',
      'journalEntries[1]: duplicate id "j" (rows 0, 1)',
      `consents[0]: duplicate consent "${doc.rejected[4]!.reason.match(/"(.*)"/)![1]}" (rows 0, 1)`,
      `consents[1]: duplicate consent "${doc.rejected[4]!.reason.match(/"(.*)"/)![1]}" (rows 0, 1)`,
    ],
  )
  t.same(
    doc.users.map((u) => u.key),
    ['other'],
  )
  t.same(
    doc.consents.map((c) => c.key),
    ['explicit'],
    'an explicit consent id is used as it is',
  )
})

t.test('the same content gives the same digest whatever the spelling of dates and emails', async (t) => {
  const a = parseDocument({ users: [user({ email: ' U@Example.ID ', createdAt: '2024-03-01T15:00:00+07:00' })] })
  const b = parseDocument({
    users: [user({ email: 'u@example.id', createdAt: '2024-03-01T08:00:00.000Z', password: { algorithm: 'none' } })],
  })
  t.equal(a.users[0]!.digest, b.users[0]!.digest)
  const c = parseDocument({ users: [user({ name: 'Changed' })] })
  t.not(a.users[0]!.digest, c.users[0]!.digest)
})

t.test('a document that is not an export is refused as a whole', async (t) => {
  for (const doc of [[], null, 'users']) {
    try {
      parseDocument(doc)
      t.fail('accepted')
    } catch (err) {
      t.ok(err instanceof ImportFileError)
      t.match((err as Error).message, 'the file is not a JSON object with sections')
    }
  }
  t.throws(() => parseDocument({ journalEntries: 'x' }), { message: 'section "journalEntries" is not an array' })
  t.same(parseDocument({}).rejected, [], 'every section is optional')
})

t.test('progress: a redrawn bar on a terminal, plain lines elsewhere', async (t) => {
  let clock = 0
  /** A stream that keeps what is written to it: a 100-column terminal, or a pipe. */
  const screen = (isTTY: boolean) => {
    const stream = {
      isTTY,
      columns: isTTY ? 100 : undefined,
      text: '',
      write: (s: string) => {
        stream.text += s
        return true
      },
    }
    return stream
  }
  /** One phase: `done` of `total` after `ms`, then finished. */
  const phase = (progress: Progress, label: string, total: number, ms: number, done: number) => {
    progress.start(label, total)
    clock += ms
    progress.advance(done)
    progress.finish()
  }
  const terminal = screen(true)
  phase(
    progressOn(terminal as never, () => clock),
    'writing users',
    4,
    500,
    2,
  )
  t.match(terminal.text, /\r\x1b\[2Kwriting users\s+\[-+\]\s+0% 0\/4/)
  t.match(terminal.text, /\[#+-+\]\s+50% 2\/4 4\/s/)
  t.match(terminal.text, /100% 4\/4 .*\n$/)

  const pipe = screen(false)
  const lines = progressOn(pipe as never, () => clock)
  phase(lines, 'checking users', 3000, 3000, 1000)
  lines.start('nothing to do', 0)
  lines.finish()
  t.same(pipe.text.split('\n'), [
    'import: checking users: 0/3000',
    'import: checking users: 1000/3000 333/s',
    'import: checking users: 3000/3000 done in 3.0 s 1000/s',
    '',
  ])
})
