// A TCP proxy on loopback that can be cut and restored: stands in for a database or Redis that
// goes down and comes back, without stopping the real server other tests use.
import { createConnection, createServer, type Server, type Socket } from 'node:net'

export class TcpProxy {
  private server: Server | undefined
  private readonly sockets = new Set<Socket>()
  port = 0

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** Starts listening (on the same port again after a cut). */
  async start(): Promise<number> {
    this.server = createServer((client) => {
      const upstream = createConnection({ host: this.targetHost, port: this.targetPort })
      for (const s of [client, upstream]) {
        this.sockets.add(s)
        s.on('close', () => this.sockets.delete(s))
        s.on('error', () => {
          client.destroy()
          upstream.destroy()
        })
      }
      client.pipe(upstream).pipe(client)
    })
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject)
      this.server!.listen(this.port, '127.0.0.1', () => resolve())
    })
    this.port = (this.server.address() as { port: number }).port
    return this.port
  }

  /** Refuses new connections and resets every open one, as a crashed server would. */
  async cut(): Promise<void> {
    const server = this.server
    this.server = undefined
    for (const s of this.sockets) s.resetAndDestroy()
    this.sockets.clear()
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  restore(): Promise<number> {
    return this.start()
  }

  close(): Promise<void> {
    return this.cut()
  }
}

/** Host and port of a postgres:// or redis:// URL, and the same URL pointed at another port. */
export function retarget(url: string, port: number): { host: string; port: number; url: string } {
  const u = new URL(url)
  const original = { host: u.hostname, port: Number(u.port || (u.protocol.startsWith('redis') ? 6379 : 5432)) }
  u.hostname = '127.0.0.1'
  u.port = String(port)
  return { ...original, url: u.toString() }
}
