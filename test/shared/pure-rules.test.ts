// The pure rules under the listings, the budgets and the plans, as properties over many inputs, in
// process and without an app: the cursor accepts exactly the encoding it produces, an IPv6 client's
// budget key is its /64 however the address is spelled, a lapsed paid plan counts as free, and a
// usage period always holds the instant it was computed for. The app-level tests keep proving that
// the routes use these rules.
import fc from 'fast-check'
import t from 'tap'
import { clientKey } from '../../src/plugins/rate-limit.js'
import { CursorParam, encodeCursor } from '../../src/shared/cursor.js'
import { currentPeriod, effectivePlan, METRIC_PERIOD, METRICS } from '../../src/usage/plans.js'
import { PLANS } from '../../src/shared/plans.js'

const RUNS = Number(process.env.PROPERTY_RUNS ?? 500)
const instant = fc.date({
  min: new Date('1970-01-01T00:00:00.000Z'),
  max: new Date('9999-12-31T23:59:59.999Z'),
  noInvalidDate: true,
})
const cursorId = fc.string({ unit: fc.constantFrom(...'abcXYZ019_-!~"\\{}'.split('')), minLength: 1, maxLength: 200 })

t.test('a cursor reads back as the instant and id it was made of', async (t) => {
  fc.assert(
    fc.property(instant, cursorId, fc.boolean(), (at, id, micros) => {
      // Rows hold 3 or 6 fraction digits: both come back exactly as written.
      const written = micros ? at.toISOString().replace('Z', '123Z') : at.toISOString()
      const parsed = CursorParam.safeParse(encodeCursor(written, id))
      if (!parsed.success) throw new Error(`refused its own cursor for ${written} ${id}`)
      if (parsed.data.at !== written || parsed.data.id !== id) throw new Error(`read back ${JSON.stringify(parsed.data)}`)
      const fromDate = CursorParam.parse(encodeCursor(at, id))
      if (fromDate.at !== at.toISOString()) throw new Error(`a Date reads back as ${fromDate.at}`)
    }),
    { numRuns: RUNS },
  )
  t.pass(`${RUNS} cursors read back`)
})

t.test('a cursor is accepted only as the exact encoding the service produces', async (t) => {
  const valid = fc.tuple(instant, cursorId).map(([at, id]) => encodeCursor(at, id))
  // Arbitrary text, and valid cursors with one character changed, dropped or added.
  const candidate = fc.oneof(
    fc.string({ maxLength: 80 }),
    fc.base64String({ maxLength: 80 }),
    fc.tuple(valid, fc.nat(), fc.constantFrom(...'AZaz09-_=+/.'.split(''))).map(([c, i, ch]) => {
      const at = i % (c.length + 1)
      return c.slice(0, at) + ch + c.slice(at + 1)
    }),
    fc.tuple(valid, fc.nat()).map(([c, i]) => c.slice(0, i % c.length) + c.slice((i % c.length) + 1)),
  )
  let accepted = 0
  fc.assert(
    fc.property(candidate, (raw) => {
      const parsed = CursorParam.safeParse(raw)
      if (!parsed.success) return
      accepted++
      const again = encodeCursor(parsed.data.at, parsed.data.id)
      if (again !== raw) throw new Error(`accepted ${raw}, which encodes as ${again}`)
    }),
    { numRuns: RUNS * 2 },
  )
  t.pass(`${RUNS * 2} candidates, ${accepted} accepted, each the exact encoding of what it holds`)
  // Found by this property: canonical base64 of our JSON with a carriage return after it, which
  // JSON.parse ignores.
  const withTrailingSpace = btoa(
    `${atob(encodeCursor('1970-01-01T00:00:00.000Z', 'aa').replaceAll('-', '+').replaceAll('_', '/'))}\r`,
  )
    .replaceAll('+', '-')
    .replaceAll('/', '_')
    .replace(/=+$/, '')
  t.notOk(CursorParam.safeParse(withTrailingSpace).success, 'our JSON with trailing white space is refused')
})

const group = fc.integer({ min: 0, max: 0xffff })
const ipv6Groups = fc.array(group, { minLength: 8, maxLength: 8 })

/** The address spelled in full, in upper or lower case, with or without leading zeros. */
function spell(groups: number[], upper: boolean, padded: boolean): string {
  const text = groups.map((g) => (padded ? g.toString(16).padStart(4, '0') : g.toString(16)))
  return (upper ? text.map((g) => g.toUpperCase()) : text).join(':')
}

/** The address with its longest run of zero groups (two or more) written as "::". */
function compress(groups: number[]): string {
  let best = { at: -1, length: 0 }
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > best.length) best = { at: i, length: j - i }
    i = j
  }
  const hex = groups.map((g) => g.toString(16))
  if (best.length < 2) return hex.join(':')
  return `${hex.slice(0, best.at).join(':')}::${hex.slice(best.at + best.length).join(':')}`
}

t.test("an IPv6 client's budget key is its /64, however the address is spelled", async (t) => {
  fc.assert(
    fc.property(ipv6Groups, fc.boolean(), fc.boolean(), (groups, upper, padded) => {
      const expected = `${groups
        .slice(0, 4)
        .map((g) => g.toString(16))
        .join(':')}::/64`
      for (const spelling of [spell(groups, upper, padded), compress(groups)]) {
        if (clientKey(spelling) !== expected) throw new Error(`${spelling} -> ${clientKey(spelling)}, not ${expected}`)
      }
    }),
    { numRuns: RUNS },
  )
  fc.assert(
    fc.property(ipv6Groups, ipv6Groups, (a, b) => {
      const sameNetwork = [...a.slice(0, 4), ...b.slice(4)]
      if (clientKey(spell(a, false, false)) !== clientKey(spell(sameNetwork, false, false))) {
        throw new Error(`${spell(a, false, false)} and ${spell(sameNetwork, false, false)} share a /64 but not a key`)
      }
      const otherNetwork = a.slice(0, 4).some((g, i) => g !== b[i])
      if (otherNetwork && clientKey(spell(a, false, false)) === clientKey(spell(b, false, false))) {
        throw new Error(`${spell(a, false, false)} and ${spell(b, false, false)} are different /64s with one key`)
      }
    }),
    { numRuns: RUNS },
  )
  t.pass(`${RUNS} IPv6 addresses and ${RUNS} pairs`)
})

t.test('an IPv4 client, plain or IPv4-mapped, is keyed by its own address', async (t) => {
  const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((parts) => parts.join('.'))
  fc.assert(
    fc.property(ipv4, fc.constantFrom('::ffff:', '::FFFF:'), (ip, prefix) => {
      if (clientKey(ip) !== ip) throw new Error(`${ip} -> ${clientKey(ip)}`)
      if (clientKey(`${prefix}${ip}`) !== ip) throw new Error(`${prefix}${ip} -> ${clientKey(`${prefix}${ip}`)}`)
    }),
    { numRuns: RUNS },
  )
  t.pass(`${RUNS} IPv4 addresses`)
})

t.test('a paid plan counts until its expiry and as free from then on; free and unexpiring plans stay', async (t) => {
  fc.assert(
    fc.property(fc.constantFrom(...PLANS), fc.option(instant, { nil: null }), instant, (plan, planExpiresAt, now) => {
      const effective = effectivePlan({ plan, planExpiresAt }, now)
      const lapsed = planExpiresAt !== null && planExpiresAt.getTime() <= now.getTime()
      const expected = plan === 'free' || lapsed ? 'free' : plan
      if (effective !== expected)
        throw new Error(`${plan} until ${planExpiresAt?.toISOString()} at ${now.toISOString()}: ${effective}`)
    }),
    { numRuns: RUNS },
  )
  t.pass(`${RUNS} plans`)
})

t.test('a usage period is the UTC day or month holding the instant, and the next one starts where it ends', async (t) => {
  const day = 24 * 60 * 60 * 1000
  fc.assert(
    fc.property(
      fc.constantFrom(...METRICS),
      fc.date({ min: new Date('2000-01-01'), max: new Date('2200-01-01'), noInvalidDate: true }),
      (metric, now) => {
        const { start, resetsAt } = currentPeriod(metric, now)
        if (!(start.getTime() <= now.getTime() && now.getTime() < resetsAt.getTime()))
          throw new Error(`${metric} at ${now.toISOString()}`)
        if (start.getUTCHours() + start.getUTCMinutes() + start.getUTCSeconds() + start.getUTCMilliseconds() !== 0) {
          throw new Error(`${metric} starts at ${start.toISOString()}, not at midnight UTC`)
        }
        if (METRIC_PERIOD[metric] === 'day' && resetsAt.getTime() - start.getTime() !== day)
          throw new Error(`${metric}: not one day`)
        if (METRIC_PERIOD[metric] === 'month' && (start.getUTCDate() !== 1 || resetsAt.getUTCDate() !== 1)) {
          throw new Error(`${metric}: ${start.toISOString()} to ${resetsAt.toISOString()} is not a calendar month`)
        }
        const next = currentPeriod(metric, resetsAt)
        if (next.start.getTime() !== resetsAt.getTime())
          throw new Error(`${metric}: the next period starts at ${next.start.toISOString()}`)
        const last = currentPeriod(metric, new Date(resetsAt.getTime() - 1))
        if (last.start.getTime() !== start.getTime())
          throw new Error(`${metric}: the period's last millisecond is in another period`)
      },
    ),
    { numRuns: RUNS },
  )
  t.pass(`${RUNS} instants`)
})
