// A TCP proxy on loopback that can be cut and restored: stands in for a database or Redis that
// goes down and comes back, without stopping the real server other tests use. It can also go
// silent (`blackhole`): sockets stay open and nothing is forwarded, as on a link that drops
// packets, which neither end notices by itself.
import { createConnection, createServer, type Server, type Socket } from 'node:net'

interface Link {
  client: Socket
  upstream: Socket
}

export class TcpProxy {
  private server: Server | undefined
  private readonly links = new Set<Link>()
  private silent = false
  port = 0

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** Starts listening (on the same port again after a cut). */
  async start(): Promise<number> {
    this.server = createServer((client) => {
      const upstream = createConnection({ host: this.targetHost, port: this.targetPort })
      const link = { client, upstream }
      this.links.add(link)
      for (const s of [client, upstream]) {
        // One end gone, the other goes too (a paused link would not pass the close on).
        s.on('close', () => {
          this.links.delete(link)
          client.destroy()
          upstream.destroy()
        })
        s.on('error', () => {
          client.destroy()
          upstream.destroy()
        })
      }
      if (!this.silent) forward(link)
    })
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject)
      this.server!.listen(this.port, '127.0.0.1', () => resolve())
    })
    this.port = (this.server.address() as { port: number }).port
    return this.port
  }

  /**
   * Stops forwarding, silently: connections stay open, new ones are accepted, and what either end
   * sends waits in the proxy, unanswered, until `heal` (as TCP retransmits across a healed link).
   */
  blackhole(): void {
    this.silent = true
    for (const { client, upstream } of this.links) {
      client.unpipe(upstream)
      upstream.unpipe(client)
      client.pause()
      upstream.pause()
    }
  }

  /** Forwards again, what waited first. */
  heal(): void {
    this.silent = false
    for (const link of this.links) forward(link)
  }

  /** Refuses new connections and resets every open one, as a crashed server would. */
  async cut(): Promise<void> {
    const server = this.server
    this.server = undefined
    for (const { client, upstream } of this.links) {
      client.resetAndDestroy()
      upstream.resetAndDestroy()
    }
    this.links.clear()
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  restore(): Promise<number> {
    return this.start()
  }

  close(): Promise<void> {
    return this.cut()
  }
}

function forward({ client, upstream }: Link): void {
  client.pipe(upstream)
  upstream.pipe(client)
}

/** Host and port of a postgres:// or redis:// URL, and the same URL pointed at another port. */
export function retarget(url: string, port: number): { host: string; port: number; url: string } {
  const u = new URL(url)
  const original = { host: u.hostname, port: Number(u.port || (u.protocol.startsWith('redis') ? 6379 : 5432)) }
  u.hostname = '127.0.0.1'
  u.port = String(port)
  return { ...original, url: u.toString() }
}
