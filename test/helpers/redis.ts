// Tests against a real Redis server (REDIS_URL), each in a corner of its own.
import { Redis } from 'ioredis'
import t, { type Test } from 'tap'

let counter = 0

/**
 * A test against the Redis at REDIS_URL, given a key prefix of its own and a client to look at its
 * keys (the keys are deleted and the client closed when it ends). Skipped when REDIS_URL is not
 * set, saying what goes untested.
 */
export function redisTest(
  name: string,
  untested: string,
  fn: (t: Test, redis: { url: string; prefix: string; redis: Redis }) => Promise<void>,
) {
  const url = process.env.REDIS_URL
  return t.test(name, { skip: url ? false : `REDIS_URL is not set: Redis is absent, ${untested}` }, async (t) => {
    if (!url) return
    const prefix = `test-${process.pid}-${Date.now()}-${counter++}:`
    const redis = new Redis(url)
    t.teardown(async () => {
      const keys = await redis.keys(`${prefix}*`)
      if (keys.length) await redis.del(...keys)
      redis.disconnect()
    })
    await fn(t, { url, prefix, redis })
  })
}
