// /api/v1/getProfile and /api/v1/updateProfile: the signed-in user's own profile, nobody else's.
import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { currentUser } from '../auth/guard.js'
import { ErrorSchema } from '../shared/errors.js'
import { contextOf } from '../shared/context.js'
import { JsonMemo } from '../shared/json-memo.js'
import type { Profile } from '../auth/queries.js'
import { ProfileSchema, toProfileJson, updateProfileBody } from './schemas.js'
import { updateProfile } from './service.js'

const tags = ['profile']
const profileJson = new JsonMemo<Profile>(ProfileSchema, 'GET', '/api/v1/getProfile')

export default async function profileRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>()
  const deps = { db: app.db, clock: app.clock }

  app.get(
    '/api/v1/getProfile',
    {
      schema: {
        operationId: 'getProfile',
        tags,
        summary: "The signed-in user's profile, including the birth data the analyses run on",
        response: { 200: ProfileSchema, 401: ErrorSchema },
      },
    },
    // Read with the session, in its one query (src/auth/session/queries.ts), and serialized once
    // per cached profile object: answered from memory, so a plain function.
    (request, reply) => {
      const { profile } = currentUser(request)
      profileJson.send(reply, profile, 0, () => toProfileJson(profile))
    },
  )

  app.post(
    '/api/v1/updateProfile',
    {
      schema: {
        operationId: 'updateProfile',
        tags,
        summary: 'Change some profile fields; omitted fields stay, null clears a nullable field',
        description:
          'birthDate is a real date from 1900-01-01 to today (UTC); birthTime HH:MM 00:00..23:59; timezone an ' +
          'IANA zone; latitude -90..90, longitude -180..180; image an https URL (<= 2048); strings are trimmed ' +
          '(name 1..100, birthPlace.name 1..200, locale a BCP-47 tag <= 35). email, role, plan and unknown ' +
          'keys are refused with 400.',
        body: updateProfileBody(app.clock),
        response: { 200: ProfileSchema, 400: ErrorSchema, 401: ErrorSchema },
      },
    },
    async (request) => {
      const profile = await updateProfile(deps, contextOf(request), currentUser(request), request.body)
      return toProfileJson(profile)
    },
  )
}
