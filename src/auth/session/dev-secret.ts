// Outside production, without AUTH_SECRET, the key that signs session cookies is made once and kept
// in the data folder (git-ignored), so restarting `npm run dev` or `npm start` keeps everyone signed
// in. Production never reaches this: there AUTH_SECRET is required (config.ts).
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const FILE = 'auth-secret'
const MIN_LENGTH = 32

export function keptDevSecret(dataDir: string): { secret: string; file: string } {
  const file = join(dataDir, FILE)
  const read = (): string | undefined => {
    try {
      const secret = readFileSync(file, 'utf8').trim()
      return secret.length >= MIN_LENGTH ? secret : undefined
    } catch {
      return undefined
    }
  }
  const kept = read()
  if (kept) return { secret: kept, file }
  mkdirSync(dataDir, { recursive: true })
  const secret = randomBytes(32).toString('base64url')
  try {
    // Readable by its owner only; `wx`: a second process starting at the same moment keeps the first's key.
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' })
    return { secret, file }
  } catch (err) {
    const other = (err as NodeJS.ErrnoException).code === 'EEXIST' ? read() : undefined
    if (other) return { secret: other, file }
    // A short or unreadable file: replaced, as if it were not there.
    writeFileSync(file, `${secret}\n`, { mode: 0o600 })
    return { secret, file }
  }
}
