// Route handlers still running when the app closes finish before what they use (the hash pool, the
// database) is closed. Fastify's close waits for open connections only: a client that hangs up in
// the middle of a sign-in ends its connection but not its handler, whose next query would otherwise
// meet a closed pool and lose the write. Work a route starts after its reply counts the same way.
import type { FastifyBaseLogger, RouteOptions } from 'fastify'

export class RunningHandlers {
  private count = 0
  private waiters: Array<() => void> = []

  private started(): void {
    this.count++
  }

  private ended(): void {
    if (--this.count === 0) for (const resolve of this.waiters.splice(0)) resolve()
  }

  /** For an `onRoute` hook: wraps the route's handler when it is async (every route of ours). */
  track(route: RouteOptions): void {
    const handler = route.handler
    if (handler.constructor.name !== 'AsyncFunction') return // plugin routes that answer at once
    const running = this
    route.handler = async function trackedHandler(this: unknown, request, reply) {
      running.started()
      try {
        return await handler.call(this as never, request, reply)
      } finally {
        running.ended()
      }
    }
  }

  /**
   * Runs `task` once the current reply has gone out (the next turn of the event loop), so its cost
   * never shows in the response time. Failures are logged, never thrown.
   */
  afterReply(log: FastifyBaseLogger, what: string, task: () => Promise<unknown>): void {
    this.started()
    setImmediate(() => {
      task()
        .catch((err: Error) =>
          log.error({ err: { message: err.message, code: (err as { code?: unknown }).code } }, `${what} failed`),
        )
        .finally(() => this.ended())
    })
  }

  /** Resolves once no handler and no after-reply task runs. */
  drained(): Promise<void> {
    if (this.count === 0) return Promise.resolve()
    return new Promise((resolve) => this.waiters.push(resolve))
  }
}
