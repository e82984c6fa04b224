// The app's log as lines, for tests that check what was logged (pass `stream` as deps.logStream).
import { Writable } from 'node:stream'

export function logLines(): { stream: Writable; lines: string[] } {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk))
      done()
    },
  })
  return { stream, lines }
}
