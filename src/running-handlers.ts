// Route handlers still running when the app closes finish before what they use (the hash pool, the
// database) is closed. Fastify's close waits for open connections only: a client that hangs up in
// the middle of a sign-in ends its connection but not its handler, whose next query would otherwise
// meet a closed pool and lose the write.
import type { RouteOptions } from 'fastify'

export class RunningHandlers {
  private count = 0
  private waiters: Array<() => void> = []

  get running(): number {
    return this.count
  }

  /** For an `onRoute` hook: wraps the route's handler when it is async (every route of ours). */
  track(route: RouteOptions): void {
    const handler = route.handler
    if (handler.constructor.name !== 'AsyncFunction') return // plugin routes that answer at once
    const started = () => this.count++
    const ended = () => {
      if (--this.count === 0) for (const resolve of this.waiters.splice(0)) resolve()
    }
    route.handler = async function trackedHandler(this: unknown, request, reply) {
      started()
      try {
        return await handler.call(this as never, request, reply)
      } finally {
        ended()
      }
    }
  }

  /** Resolves once no handler runs. */
  drained(): Promise<void> {
    if (this.count === 0) return Promise.resolve()
    return new Promise((resolve) => this.waiters.push(resolve))
  }
}
