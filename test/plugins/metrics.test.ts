import t from 'tap'
import { buildTestApp, signUp } from '../helpers/app.js'

const app = await buildTestApp({ env: { METRICS_TOKEN: 'metrics-token-for-tests' } })

/** GET /metrics from an address that is not loopback, with this bearer token if any. */
const remoteMetrics = (token?: string) =>
  app.inject({
    method: 'GET',
    url: '/metrics',
    remoteAddress: '203.0.113.9',
    ...(token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } }),
  })

t.test('metrics count requests by route pattern and status, with latency and pool gauges', async (t) => {
  const user = await signUp(app)
  await app.inject({ method: 'GET', url: '/api/v1/whoami', headers: { cookie: user.cookie } })
  await app.inject({ method: 'GET', url: '/api/v1/no-such-route' })
  const res = await app.inject({ method: 'GET', url: '/metrics' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /text\/plain/)
  t.match(res.body, /http_requests_total\{method="GET",route="\/api\/v1\/whoami",status="200"\} 1/)
  t.match(res.body, /http_requests_total\{method="GET",route="unmatched",status="404"\} 1/)
  t.match(res.body, /http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/api\/v1\/whoami"/)
  // A histogram as Prometheus reads it: cumulative buckets, +Inf equal to the count, a sum.
  const whoami = 'method="GET",route="/api/v1/whoami",status="200"'
  const line = (name: string) => res.body.split('\n').find((l) => l.startsWith(name))
  const buckets = res.body.split('\n').filter((l) => l.startsWith('http_request_duration_seconds_bucket{') && l.includes(whoami))
  t.equal(buckets.length, 13, 'twelve bounds and +Inf')
  const counts = buckets.map((l) => Number(l.split(' ').pop()))
  t.same(
    [...counts].sort((a, b) => a - b),
    counts,
    'cumulative',
  )
  t.equal(
    line(`http_request_duration_seconds_bucket{le="+Inf",${whoami}}`),
    `http_request_duration_seconds_bucket{le="+Inf",${whoami}} 1`,
  )
  t.equal(line(`http_request_duration_seconds_count{${whoami}}`), `http_request_duration_seconds_count{${whoami}} 1`)
  t.ok(Number(line(`http_request_duration_seconds_sum{${whoami}}`)?.split(' ').pop()) > 0)
  t.match(res.body, /db_pool_connections\{state="total"\}/)
  t.match(res.body, /password_hashes_in_flight 0/)
  t.match(res.body, /process_resident_memory_bytes/)
  t.notMatch(res.body, /no-such-route/, 'raw URLs never become labels')
})

t.test('metrics are refused to a remote address without the token', async (t) => {
  const res = await remoteMetrics()
  t.equal(res.statusCode, 403)
  t.match(res.json(), { code: 'FORBIDDEN', status: 403 })
  const wrong = await remoteMetrics('metrics-token-for-test')
  t.equal(wrong.statusCode, 403)
})

t.test('metrics are served to a remote address with the bearer token', async (t) => {
  const res = await remoteMetrics('metrics-token-for-tests')
  t.equal(res.statusCode, 200)
})

t.test('behind a trusted proxy, loopback alone is not enough', async (t) => {
  const proxied = await buildTestApp({ env: { TRUST_PROXY: '127.0.0.1' } })
  const res = await proxied.inject({ method: 'GET', url: '/metrics' })
  t.equal(res.statusCode, 403)
})
