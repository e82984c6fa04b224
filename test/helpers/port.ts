// A free TCP port on loopback, for a server whose URL must be known before it listens
// (AUTH_URL, a provider's redirect URI) or that runs in another process. Used by tests and the bench.
import { createServer } from 'node:net'

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}
