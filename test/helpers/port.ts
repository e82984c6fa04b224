// A free TCP port on loopback, for a server whose URL must be known before it listens
// (AUTH_URL, a provider's redirect URI) or that runs in another process. Used by tests and the bench.
//
// The port is free when it is returned and taken later, so it is drawn from below the kernel's
// ephemeral range where the system has one: a port of that range, once released, can be handed to
// any outgoing connection (to PostgreSQL, Redis, SMTP) or to another test's listen(0) before its
// server binds it (seen as EADDRINUSE when the suite runs three files at a time). Below the range
// only explicit binds compete, and each draw is a random port that is checked by binding it.
import { readFileSync } from 'node:fs'
import { randomInt } from 'node:crypto'
import { createServer } from 'node:net'

const LOWEST = 10_000

/** Listens on `port` (0: any) on loopback and closes; the port it got, or null when it was taken. */
function probe(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const srv = createServer()
    srv.once('error', () => resolve(null))
    srv.listen(port, '127.0.0.1', () => {
      const { port: bound } = srv.address() as { port: number }
      srv.close(() => resolve(bound))
    })
  })
}

/** The first port of the kernel's ephemeral range, when it is known and leaves room below it. */
function ephemeralStart(): number | null {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    return low > LOWEST + 1000 ? low : null
  } catch {
    return null
  }
}

const below = ephemeralStart()

export async function freePort(): Promise<number> {
  if (below !== null) {
    for (let tries = 0; tries < 50; tries++) {
      const port = await probe(randomInt(LOWEST, below))
      if (port !== null) return port
    }
  }
  const port = await probe(0)
  if (port === null) throw new Error('no free port on 127.0.0.1')
  return port
}
