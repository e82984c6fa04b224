// better-auth 1.6's jwt plugin routes: GET /api/auth/token (a session's token) and GET
// /api/auth/jwks (the public keys that verify it). get-session sends the same token in its
// `set-auth-jwt` header (routes/session.ts). The issuer and its signing keys are built by
// auth/plugin.ts (`app.tokens`, `app.signingKeys`; src/auth/tokens/).
import { z } from 'zod'
import { type RoutePolicy, SESSION_OR_GUEST } from '../../shared/route-policy.js'
import { currentUser } from '../../user/signed-in.js'
import { declareRoutes, serveRoutes } from './serve.js'

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

export const tokenRoutes = declareRoutes({
  getJSONWebToken: {
    method: 'GET',
    path: '/api/auth/token',
    // A guest's token too: the AI backend serves guests within the free plan. Never an
    // impersonation's: a bearer credential outlives stop-impersonating and acts outside support mode.
    policy: { ...SESSION_OR_GUEST, whileImpersonating: 'refused' },
    summary: (config) => `A token for other services: EdDSA, ${config.jwt.ttlSeconds} s, sub = the user id, role and plan claims`,
    response: { 200: z.object({ token: z.string() }) },
    errors: [401, 403],
  },
  getJSONWebKeySet: {
    method: 'GET',
    path: '/api/auth/jwks',
    policy: KEY_SET,
    summary: 'The public keys that verify the tokens: the signing key, the next one, and retired ones while their tokens live',
    response: { 200: z.object({ keys: z.array(JwkSchema) }) },
  },
})

export default serveRoutes(tokenRoutes, (app) => ({
  getJSONWebToken: async (request) => ({ token: await app.tokens.issue(currentUser(request), request.session!) }),
  getJSONWebKeySet: async (_request, reply) => {
    reply.header('cache-control', `public, max-age=${KEY_SET_MAX_AGE}`)
    return (await app.signingKeys.keySet()) as { keys: z.infer<typeof JwkSchema>[] }
  },
}))
