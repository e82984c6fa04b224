// A local HTTP server that lives as long as the test file: the browser tests' web origins, the fake
// identity providers.
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'

/**
 * Starts `server` on `host`:`port` (a free port for 0) and closes it when this file's tests end,
 * kept-alive connections too (a browser or fetch keeps them). Returns the port.
 */
export async function listenUntilEnd(server: Server, { port = 0, host = '127.0.0.1' } = {}): Promise<number> {
  await new Promise<void>((resolve) => server.listen(port, host, resolve))
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  return (server.address() as AddressInfo).port
}
