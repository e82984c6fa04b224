// better-auth 1.6's jwt plugin routes: GET /api/auth/token (a session's token) and GET
// /api/auth/jwks (the public keys that verify it). get-session sends the same token in its
// `set-auth-jwt` header (src/auth/session/routes.ts, through `app.tokens`).
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { ErrorSchema } from '../../shared/errors.js'
import { type RoutePolicy, SESSION_OR_GUEST } from '../../shared/route-policy.js'
import { currentUser } from '../../user/signed-in.js'
import { TokenIssuer } from './issuer.js'
import { KeySeal, SigningKeys } from './keys.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Issues the tokens (issuer.ts). */
    tokens: TokenIssuer
    /** Their signing keys: the maintenance task rotates them (keys.ts). */
    signingKeys: SigningKeys
  }
}

/** The header get-session sends the token in (better-auth's jwt plugin). */
export const TOKEN_HEADER = 'set-auth-jwt'

const tags = ['auth']
/** Public and sessionless: a verifier fetches it with no cookie; caches may keep it (keys.ts publishes ahead). */
const KEY_SET: RoutePolicy = Object.freeze({ access: 'public', cacheable: true })
const KEY_SET_MAX_AGE = 300

const JwkSchema = z
  .object({
    kty: z.literal('OKP'),
    crv: z.literal('Ed25519'),
    x: z.string(),
    alg: z.literal('EdDSA'),
    use: z.literal('sig'),
    kid: z.string(),
  })
  .meta({ id: 'JsonWebKey' })

export default fp(
  async function tokenRoutes(fastify: FastifyInstance) {
    const app = fastify.withTypeProvider<ZodTypeProvider>()
    const { jwt, auth } = app.config
    const keys = new SigningKeys(app.db, app.clock, new KeySeal(auth.secrets), {
      rotationMs: jwt.keyRotationDays * 24 * 60 * 60 * 1000,
      tokenTtlMs: jwt.ttlSeconds * 1000,
    })
    app.decorate('signingKeys', keys)
    app.decorate('tokens', new TokenIssuer(keys, app.clock, jwt))

    app.get(
      '/api/auth/token',
      {
        // A guest's token too: the AI backend serves guests within the free plan.
        config: { policy: SESSION_OR_GUEST },
        schema: {
          operationId: 'getJSONWebToken',
          tags,
          summary: `A token for other services: EdDSA, ${jwt.ttlSeconds} s, sub = the user id, role and plan claims`,
          response: { 200: z.object({ token: z.string() }), 401: ErrorSchema },
        },
      },
      async (request) => ({ token: await app.tokens.issue(currentUser(request), request.session!) }),
    )

    app.get(
      '/api/auth/jwks',
      {
        config: { policy: KEY_SET },
        schema: {
          operationId: 'getJSONWebKeySet',
          tags,
          summary:
            'The public keys that verify the tokens: the signing key, the next one, and retired ones while their tokens live',
          response: { 200: z.object({ keys: z.array(JwkSchema) }) },
        },
      },
      async (_request, reply) => {
        reply.header('cache-control', `public, max-age=${KEY_SET_MAX_AGE}`)
        return (await keys.keySet()) as { keys: z.infer<typeof JwkSchema>[] }
      },
    )
  },
  { name: 'tokens' },
)
