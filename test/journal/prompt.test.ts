import { sql } from 'kysely'
import t from 'tap'
import { PROMPTS, promptOfDay } from '../../src/journal/prompts.js'
import { buildTestApp, call, signUp } from '../helpers/app.js'
import { eachIsValidationError } from '../helpers/expect.js'

let nowMs = Date.parse('2026-05-20T23:30:00.000Z')
const app = await buildTestApp({ deps: { clock: { now: () => new Date(nowMs) } } })
const PROMPT = '/api/v1/journal/prompt/today'

const alice = await signUp(app)
const bob = await signUp(app)

async function prompt(cookie: string, query = '') {
  const res = await call(app, 'GET', `${PROMPT}${query}`, { cookie })
  t.equal(res.statusCode, 200, `prompt ${query}`)
  return res.json() as { id: string; date: string; text: string; locale: string }
}

t.test('the shipped list has at least 30 distinct prompts in each of Indonesian and English', async (t) => {
  t.ok(PROMPTS.length >= 30)
  t.equal(new Set(PROMPTS.map((p) => p.id)).size, PROMPTS.length, 'ids are unique')
  t.equal(new Set(PROMPTS.map((p) => p.id_text)).size, PROMPTS.length, 'Indonesian texts are distinct')
  t.equal(new Set(PROMPTS.map((p) => p.en_text)).size, PROMPTS.length, 'English texts are distinct')
  for (const p of PROMPTS) {
    t.ok(p.id_text.length >= 20 && p.en_text.length >= 20, p.id)
    t.not(p.id_text, p.en_text, p.id)
  }
})

t.test('everybody gets the same prompt on a date and locale', async (t) => {
  const a = await prompt(alice.cookie, '?date=2026-05-21&locale=en')
  const b = await prompt(bob.cookie, '?date=2026-05-21&locale=en')
  t.same(a, b)
  t.same(a, { ...promptOfDay('2026-05-21', 'en'), date: '2026-05-21', locale: 'en' })
})

t.test('the prompt changes from one day to the next, in both locales', async (t) => {
  for (const locale of ['en', 'id']) {
    let previous = await prompt(alice.cookie, `?date=2026-01-01&locale=${locale}`)
    for (let day = 2; day <= 31; day++) {
      const date = `2026-01-${String(day).padStart(2, '0')}`
      const next = await prompt(alice.cookie, `?date=${date}&locale=${locale}`)
      t.not(next.id, previous.id, `${locale} ${date}`)
      t.not(next.text, previous.text)
      previous = next
    }
  }
})

t.test('one cycle of days visits every prompt once', async (t) => {
  const start = Date.parse('2026-01-01T00:00:00Z')
  const ids = new Set<string>()
  for (let i = 0; i < PROMPTS.length; i++) {
    ids.add(promptOfDay(new Date(start + i * 86_400_000).toISOString().slice(0, 10), 'en').id)
  }
  t.equal(ids.size, PROMPTS.length)
})

t.test('Indonesian and English give the same prompt id in their own language', async (t) => {
  const id = await prompt(alice.cookie, '?date=2026-06-01&locale=id')
  const en = await prompt(alice.cookie, '?date=2026-06-01&locale=en')
  t.equal(id.id, en.id)
  t.equal(id.locale, 'id')
  t.equal(en.locale, 'en')
  t.not(id.text, en.text)
  t.equal(id.text, PROMPTS.find((p) => p.id === id.id)?.id_text)
  t.same(await prompt(alice.cookie, '?date=2026-06-01&locale=id-ID'), id, 'a regional tag is accepted')
  t.same(await prompt(alice.cookie, '?date=2026-06-01&locale=en-US'), en)
  t.same(await prompt(alice.cookie, '?date=2026-06-01&locale=fr'), en, 'other languages fall back to English')
})

t.test("without a date the prompt is today's (UTC) by the service clock", async (t) => {
  const today = await prompt(alice.cookie, '?locale=en')
  t.equal(today.date, '2026-05-20')
  nowMs += 3600_000 // past midnight UTC
  const tomorrow = await prompt(alice.cookie, '?locale=en')
  t.equal(tomorrow.date, '2026-05-21')
  t.not(tomorrow.id, today.id)
})

t.test("without a locale the profile's locale decides, else English", async (t) => {
  const plain = await prompt(bob.cookie, '?date=2026-06-02')
  t.equal(plain.locale, 'en')
  await sql`update "user" set locale = 'id-ID' where id = ${bob.id}`.execute(app.db)
  const fromProfile = await prompt(bob.cookie, '?date=2026-06-02')
  t.equal(fromProfile.locale, 'id')
  t.equal(fromProfile.id, plain.id)
  t.equal((await prompt(bob.cookie, '?date=2026-06-02&locale=en')).locale, 'en', 'the query wins over the profile')
})

t.test('bad prompt queries are 400', async (t) => {
  const badQueries = [
    ...['2026-02-30', 'today', '2026-5-1'].map((date) => `?date=${date}`),
    ...['e', 'en_US!', 'a'.repeat(40)].map((locale) => `?locale=${locale}`),
    '?foo=1',
  ]
  await eachIsValidationError(t, badQueries, (query) => call(app, 'GET', `${PROMPT}${query}`, { cookie: alice.cookie }))
})
