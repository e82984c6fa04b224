// The count writer (src/usage/count-writer.ts) on the real database: counts that wait while a
// statement is out are written together, and each is answered as if it had had a statement of its own.
import t from 'tap'
import { CountWriter } from '../../src/usage/count-writer.js'
import { type CounterKey, readCounter } from '../../src/usage/queries.js'
import { buildTestApp, signUp } from '../helpers/app.js'

const app = await buildTestApp()
const PERIOD = new Date('2026-06-10T00:00:00Z')
const keyOf = (userId: string, metric = 'aiMessages'): CounterKey => ({ userId, metric, periodStart: PERIOD })

/** A writer whose first statement is out, so that every count added next waits for one batch. */
function busyWriter(): { writer: CountWriter; first: Promise<unknown> } {
  const writer = new CountWriter(app.db)
  return { writer, first: writer.add(keyOf(warmUp), 1, null) }
}
const warmUp = (await signUp(app)).id

t.test('counts of several members, asked for at once, are each answered with their own counter', async (t) => {
  const [a, b, c] = [(await signUp(app)).id, (await signUp(app)).id, (await signUp(app)).id]
  const { writer, first } = busyWriter()
  const answers = await Promise.all([
    writer.add(keyOf(a), 2, 10),
    writer.add(keyOf(b), 5, null),
    writer.add(keyOf(c, 'journalEntries'), 1, 5),
    writer.add(keyOf(a, 'compatibilityChecks'), 3, 3),
  ])
  await first
  t.same(answers, [
    { used: 2, seen: 0 },
    { used: 5, seen: 0 },
    { used: 1, seen: 0 },
    { used: 3, seen: 0 },
  ])
  t.equal(await readCounter(app.db, keyOf(a)), 2)
  t.equal(await readCounter(app.db, keyOf(b)), 5)
  t.equal(await readCounter(app.db, keyOf(c, 'journalEntries')), 1)
  t.equal(await readCounter(app.db, keyOf(a, 'compatibilityChecks')), 3)
})

t.test('one counter asked for several times in a batch: each part gets the count it brought it to, in order', async (t) => {
  const user = (await signUp(app)).id
  const { writer, first } = busyWriter()
  const answers = await Promise.all([1, 2, 3, 4].map((amount) => writer.add(keyOf(user), amount, 10)))
  await first
  t.same(
    answers.map((a) => a.used),
    [1, 3, 6, 10],
  )
  t.equal(await readCounter(app.db, keyOf(user)), 10, 'exactly the sum, up to the limit')
})

t.test('a batch whose parts do not all fit counts those that still fit, in order, and refuses the rest', async (t) => {
  const user = (await signUp(app)).id
  await new CountWriter(app.db).add(keyOf(user), 8, 10)
  const { writer, first } = busyWriter()
  const answers = await Promise.all([1, 5, 1, 1].map((amount) => writer.add(keyOf(user), amount, 10)))
  await first
  t.same(answers, [
    { used: 9, seen: 8 },
    { used: undefined, seen: 9 },
    { used: 10, seen: 9 },
    { used: undefined, seen: 10 },
  ])
  t.equal(await readCounter(app.db, keyOf(user)), 10)
})

t.test('one counter asked for under two limits in a batch (the plan lapsed between them): each part under its own', async (t) => {
  const [payer, other] = [(await signUp(app)).id, (await signUp(app)).id]
  await new CountWriter(app.db).add(keyOf(payer), 10, 200)
  const { writer, first } = busyWriter()
  const answers = await Promise.all([
    writer.add(keyOf(payer), 1, 200), // premium, still running
    writer.add(keyOf(payer), 1, 10), // free once it lapsed: already past the limit
    writer.add(keyOf(other), 1, 10),
  ])
  await first
  t.same(answers, [
    { used: 11, seen: 10 },
    { used: undefined, seen: 11 },
    { used: 1, seen: 0 },
  ])
  t.equal(await readCounter(app.db, keyOf(payer)), 11)
  t.equal(await readCounter(app.db, keyOf(other)), 1, "another member's count in the same batch is written")
})

t.test('a count the database refuses fails alone; the others in its batch are counted', async (t) => {
  const user = (await signUp(app)).id
  const { writer, first } = busyWriter()
  const answers = await Promise.allSettled([
    writer.add(keyOf(user), 1, null),
    writer.add(keyOf('no-such-user'), 1, null), // the counter's foreign key: its user is gone
    writer.add(keyOf(user, 'journalEntries'), 2, null),
  ])
  await first
  t.same(answers[0], { status: 'fulfilled', value: { used: 1, seen: 0 } })
  t.equal(answers[1]!.status, 'rejected')
  t.match((answers[1] as PromiseRejectedResult).reason, { code: '23503' })
  t.same(answers[2], { status: 'fulfilled', value: { used: 2, seen: 0 } })
})

t.test('a counter already at its limit is refused with what it holds, and nothing is written', async (t) => {
  const user = (await signUp(app)).id
  const writer = new CountWriter(app.db)
  t.same(await writer.add(keyOf(user), 3, 3), { used: 3, seen: 0 })
  t.same(await writer.add(keyOf(user), 1, 3), { used: undefined, seen: 3 })
  t.equal(await readCounter(app.db, keyOf(user)), 3)
})
