// The real server as a child process (src/server.ts, compiled as the tests are), for tests that
// need real sockets, several instances or signals. A start is given two minutes: on a loaded 2-core
// machine (CI running both suites beside other work) two servers starting at once took over 30 s.
import { spawn, type ChildProcess } from 'node:child_process'
import { TEST_ENV } from './app.js'
import { entryPoint, ROOT } from './paths.js'
import { freePort } from './port.js'

export interface ServerProcess {
  url: string
  child: ChildProcess
  output: () => string
  /** Waits until the output contains `text` (a child's pipe may deliver it after its socket answered). */
  outputWith(text: string, timeoutMs?: number): Promise<string>
  exited: Promise<number | null>
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

export async function startServer(env: Record<string, string | undefined>, timeoutMs = 120_000): Promise<ServerProcess> {
  const port = await freePort()
  let output = ''
  const child = spawn(process.execPath, entryPoint('src/server.ts'), {
    cwd: ROOT,
    env: { PATH: process.env.PATH, ...TEST_ENV, LOG_LEVEL: 'warn', ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout!.on('data', (d) => (output += d))
  child.stderr!.on('data', (d) => (output += d))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early (${child.exitCode}):\n${output}`)
    try {
      const res = await fetch(`${url}/api/health/live`)
      if (res.ok) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`server did not start within ${timeoutMs} ms:\n${output}`)
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    url,
    child,
    output: () => output,
    async outputWith(text, waitMs = 10_000) {
      const until = Date.now() + waitMs
      while (!output.includes(text) && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
      return output
    },
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal)
      return exited
    },
  }
}
