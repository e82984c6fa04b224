// What was written to a stream, for tests that check it: the app's log as lines (pass `stream` as
// deps.logStream), or a command's output as text (pass it as its stdout or stderr).
import { Writable } from 'node:stream'

export function logLines(): { stream: Writable; lines: string[]; text: () => string } {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk))
      done()
    },
  })
  return { stream, lines, text: () => lines.join('') }
}
