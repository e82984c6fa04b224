// Another service (the AI backend) verifying a token of the account service, with jose alone: no
// database, no call to the account service per message; the key set is fetched once and cached,
// and fetched again when a token names a key it has not seen (a rotation).
//
//   ACCOUNTS_URL=http://localhost:8787 JWT_ISSUER=http://localhost:8787 JWT_AUDIENCE=http://localhost:8787 \
//     node docs/examples/verify-token.mjs <token>
//
// Prints the caller's claims as JSON, or the reason for refusing the token (exit code 1).
import { createRemoteJWKSet, jwtVerify } from 'jose'

const accounts = process.env.ACCOUNTS_URL ?? 'http://localhost:8787'
const keySet = createRemoteJWKSet(new URL('/api/auth/jwks', accounts))

/** Who is calling and on which plan, or a thrown error (expired, wrong issuer or audience, bad signature). */
export async function caller(token) {
  const { payload } = await jwtVerify(token, keySet, {
    algorithms: ['EdDSA'],
    issuer: process.env.JWT_ISSUER ?? accounts,
    audience: process.env.JWT_AUDIENCE ?? accounts,
  })
  // A paid plan lapses at planExpiresAt (seconds); the token may outlive that by minutes.
  const now = Math.floor(Date.now() / 1000)
  const plan = payload.planExpiresAt !== null && payload.planExpiresAt <= now ? 'free' : payload.plan
  return {
    userId: payload.sub,
    role: payload.role,
    plan,
    guest: payload.isAnonymous === true,
    actingAdministrator: payload.act?.sub ?? null,
    expiresAt: new Date(payload.exp * 1000).toISOString(),
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    console.log(JSON.stringify(await caller(process.argv[2] ?? '')))
  } catch (err) {
    console.error(`refused: ${err.code ?? err.message}`)
    process.exit(1)
  }
}
