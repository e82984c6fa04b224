// docs/examples/verify-token.mjs, the other service's side of docs/tokens.md, run as a process of
// its own against the real service: a token of a session is accepted with its claims, a forged or
// foreign one refused.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import t from 'tap'
import { buildTestApp, signUp } from '../helpers/app.js'
import { apiUrl } from '../helpers/auth-client.js'
import { ROOT } from '../helpers/paths.js'

const app = await buildTestApp({ env: { JWT_AUDIENCE: 'https://ai.example.test' } })
await app.listen({ port: 0, host: '127.0.0.1' })
const base = apiUrl((app.server.address() as { port: number }).port)

function runExample(token: string, env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'docs/examples/verify-token.mjs'), token],
      {
        env: {
          PATH: process.env.PATH,
          ACCOUNTS_URL: base,
          JWT_ISSUER: app.config.jwt.issuer,
          JWT_AUDIENCE: 'https://ai.example.test',
          ...env,
        },
      },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

t.test('the documented verifier accepts a session token and reads who calls and on which plan', async (t) => {
  const user = await signUp(app)
  const res = await app.inject({ method: 'GET', url: '/api/auth/token', headers: { cookie: user.cookie } })
  const { token } = res.json() as { token: string }
  const run = await runExample(token)
  t.equal(run.code, 0, run.stderr)
  t.match(JSON.parse(run.stdout), { userId: user.id, role: 'member', plan: 'free', guest: false, actingAdministrator: null })

  const otherAudience = await runExample(token, { JWT_AUDIENCE: 'https://another.example.test' })
  t.equal(otherAudience.code, 1, 'a token for another audience is refused')
  t.match(otherAudience.stderr, /ERR_JWT_CLAIM_VALIDATION_FAILED/)

  const [header, payload] = token.split('.')
  const forged = `${header}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), plan: 'premium_plus' })).toString('base64url')}.${token.split('.')[2]}`
  const refused = await runExample(forged)
  t.equal(refused.code, 1, 'a changed claim breaks the signature')
  t.match(refused.stderr, /ERR_JWS_SIGNATURE_VERIFICATION_FAILED/)
})
