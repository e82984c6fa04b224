// The second baseline: the least a session check can do, in a bare Fastify (logger off). Reads the
// session cookie, SHA-256 of its token, one indexed join of session and user on the same
// PostgreSQL (node-postgres pool of 20). No signature check, no renewal, no schema work.
// With `prepared`, the join is a named prepared statement, as the service's own lookup is
// (db/prepared.ts): the stricter baseline, since it saves PostgreSQL the parse and plan per call.
// Usage: tsx bench/session-baseline.ts <port> <databaseUrl> <cookieName> [prepared]
import { createHash } from 'node:crypto'
import Fastify from 'fastify'
import pg from 'pg'

const [port = '18081', databaseUrl, cookieName = 'better-auth.session_token', mode] = process.argv.slice(2)
if (!databaseUrl) throw new Error('usage: session-baseline.ts <port> <databaseUrl> <cookieName> [prepared]')
const name = mode === 'prepared' ? 'session_lookup' : undefined
const pool = new pg.Pool({ connectionString: databaseUrl, max: 20 })

const QUERY = `select s.id as session_id, s.expires_at, u.id, u.name, u.email, u.email_verified, u.image,
  u.role, u.plan, u.plan_expires_at, u.created_at, u.updated_at
  from session s join "user" u on u.id = s.user_id where s.token_hash = $1`

/** The token of the signed cookie `token.signature` (URL-encoded): the part before the last dot. */
function tokenOf(header: string | undefined): string | null {
  if (!header) return null
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0 || part.slice(0, eq).trim() !== cookieName) continue
    const value = decodeURIComponent(part.slice(eq + 1).trim())
    const dot = value.lastIndexOf('.')
    return dot > 0 ? value.slice(0, dot) : null
  }
  return null
}

const app = Fastify({ logger: false })
app.get('/', async (request, reply) => {
  const token = tokenOf(request.headers.cookie)
  if (!token) return reply.code(401).send({ session: null })
  const hash = createHash('sha256').update(token).digest('hex')
  const { rows } = await pool.query({ name, text: QUERY, values: [hash] })
  if (rows.length === 0) return reply.code(401).send({ session: null })
  return { session: { id: rows[0].session_id, expiresAt: rows[0].expires_at }, user: rows[0] }
})
app.get('/up', async () => ({ ok: true }))
await app.listen({ port: Number(port), host: '127.0.0.1' })
process.on(
  'SIGTERM',
  () =>
    void app
      .close()
      .then(() => pool.end())
      .then(() => process.exit(0)),
)
