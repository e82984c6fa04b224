// Limits hold under concurrency: N parallel increments at a limit of L give exactly L successes.
// Runs on whichever database the helper gives (PGlite, or PostgreSQL with DATABASE_URL set).
import type { LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { currentPeriod } from '../../src/usage/plans.js'
import { readCounter } from '../../src/usage/queries.js'
import { consumeUsage } from '../../src/usage/service.js'
import { buildTestApp, call, signUp, type TestUser } from '../helpers/app.js'
import { usingPostgres } from '../helpers/db.js'

// About 1,800 requests through the whole stack: on a busy shared machine that can pass the
// runner's default file timeout, which says nothing about limits.
t.setTimeout(600_000)

// A fixed clock, so that a run across UTC midnight cannot split a case over two periods.
const NOW = new Date('2026-06-10T12:00:00Z')
const app = await buildTestApp({ deps: { clock: { now: () => NOW } } })
const PARALLEL = 200

type Plan = 'free' | 'premium' | 'premium_plus'
type Metric = 'aiMessages' | 'compatibilityChecks' | 'journalEntries'

async function member(plan: Plan): Promise<TestUser> {
  const user = await signUp(app)
  await app.db.updateTable('user').set({ plan }).where('id', '=', user.id).execute()
  return user
}

/**
 * Fires `PARALLEL` increments at once and returns each one's final answer. A 503 (the pool's
 * back-pressure on a loaded machine: no connection within its acquire timeout, nothing sent) is
 * not a limit decision; like a client honouring Retry-After, those requests are sent again, all
 * at once. Any other status is kept as it is, and a 503 that had counted would show up below as
 * a counter above the successes.
 */
async function incrementInParallel(t: Test, user: TestUser, metric: Metric, body?: { amount: number }) {
  const fire = () => call(app, 'POST', `/api/v1/usage/${metric}/increment`, { cookie: user.cookie, body })
  let answers: LightMyRequestResponse[] = await Promise.all(Array.from({ length: PARALLEL }, fire))
  let unavailable = 0
  for (let round = 0; round < 20 && answers.some((r) => r.statusCode === 503); round++) {
    unavailable += answers.filter((r) => r.statusCode === 503).length
    answers = await Promise.all(answers.map((r) => (r.statusCode === 503 ? fire() : r)))
  }
  if (unavailable > 0) t.comment(`${unavailable} answers were 503 (pool back-pressure) and were sent again`)
  return answers
}

const usedNow = (user: TestUser, metric: Metric) =>
  readCounter(app.db, { userId: user.id, metric, periodStart: currentPeriod(metric, NOW).start })

// limit / amount = the number of requests that fit.
const cases: { plan: Plan; metric: Metric; amount: number; limit: number }[] = [
  { plan: 'free', metric: 'aiMessages', amount: 1, limit: 10 },
  { plan: 'free', metric: 'journalEntries', amount: 1, limit: 5 },
  { plan: 'free', metric: 'compatibilityChecks', amount: 1, limit: 3 },
  { plan: 'premium', metric: 'aiMessages', amount: 20, limit: 200 },
  { plan: 'premium', metric: 'journalEntries', amount: 5, limit: 50 },
  { plan: 'premium', metric: 'compatibilityChecks', amount: 3, limit: 30 },
  { plan: 'premium', metric: 'journalEntries', amount: 7, limit: 50 }, // 7 fit (49), the 8th would pass 50
  { plan: 'premium', metric: 'aiMessages', amount: 1, limit: 200 }, // all 200 fit exactly
]

t.comment(`database: ${usingPostgres() ? 'postgres' : 'pglite'}`)

for (const c of cases) {
  const fit = Math.floor(c.limit / c.amount)
  t.test(
    `${PARALLEL} parallel ${c.metric} increments of ${c.amount} on ${c.plan} (limit ${c.limit}): exactly ${fit} succeed`,
    async (t) => {
      const user = await member(c.plan)
      const responses = await incrementInParallel(t, user, c.metric, { amount: c.amount })
      const ok = responses.filter((r) => r.statusCode === 200)
      const refused = responses.filter((r) => r.statusCode === 402)
      t.equal(ok.length, fit, 'successes')
      t.equal(refused.length, PARALLEL - fit, 'refusals')
      t.equal(ok.length + refused.length, PARALLEL, 'no other status (no 500, no 409)')
      t.equal(await usedNow(user, c.metric), fit * c.amount, 'the counter holds exactly the successes')

      // Each success saw a distinct step of the count: no two requests read-modified-wrote the same value.
      const seen = ok.map((r) => r.json().used as number).sort((a, b) => a - b)
      t.same(
        seen,
        Array.from({ length: fit }, (_, i) => (i + 1) * c.amount),
      )
      for (const r of refused) {
        const body = r.json()
        if (body.code !== 'PLAN_LIMIT_REACHED' || body.data.limit !== c.limit || body.data.used > c.limit) {
          t.fail(`unexpected refusal ${r.body}`)
          return
        }
      }
    },
  )
}

t.test(`${PARALLEL} parallel increments on premium_plus are all counted`, async (t) => {
  const user = await member('premium_plus')
  const responses = await incrementInParallel(t, user, 'aiMessages')
  t.same([...new Set(responses.map((r) => r.statusCode))], [200])
  t.equal(await usedNow(user, 'aiMessages'), PARALLEL, 'no lost update')
})

t.test('parallel transactions that each pay through consumeUsage: exactly the limit commit', async (t) => {
  const user = await member('free')
  const subject = { id: user.id, plan: 'free' as const, planExpiresAt: null }
  const results = await Promise.allSettled(
    Array.from({ length: 50 }, (_, i) =>
      app.db.transaction().execute(async (trx) => {
        await consumeUsage(trx, subject, 'journalEntries', 1, NOW)
        // The act being paid for, in the same transaction.
        await trx
          .insertInto('audit_event')
          .values({ id: `conc-${user.id}-${i}`, actor_id: user.id, action: 'test.paid_act' })
          .execute()
      }),
    ),
  )
  const committed = results.filter((r) => r.status === 'fulfilled').length
  t.equal(committed, 5)
  for (const r of results) {
    if (r.status === 'rejected') t.match(r.reason, { status: 402, code: 'PLAN_LIMIT_REACHED' })
  }
  t.equal(await usedNow(user, 'journalEntries'), 5)
  const acts = await app.db
    .selectFrom('audit_event')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('actor_id', '=', user.id)
    .where('action', '=', 'test.paid_act')
    .executeTakeFirstOrThrow()
  t.equal(Number(acts.n), 5, 'one act per counted use, none without')
})
