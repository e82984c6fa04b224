// The GET of an emailed link that opens a page (a sign-in link, a security notice's "this wasn't
// me"): opening it changes nothing, since mail scanners open every link; only the page's button
// (shared/html-page.ts, tokenButtonPage) acts. No session: the link is opened wherever the mail is read.
import type { FastifyInstance } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { type Page, sendPage } from '../../shared/html-page.js'
import { SIGN_IN_PER_IP } from '../../shared/route-policy.js'
import { EmailedToken } from '../core/schemas.js'

/** Registers GET `url?token=`: the `live` page of what `find` finds for the token, else the `dead` page (400). */
export function linkPageRoute<Found>(
  fastify: FastifyInstance,
  url: string,
  doc: { operationId: string; tags: string[]; summary: string },
  page: {
    find: (token: string) => Promise<Found | null | undefined>
    live: (found: Found, token: string) => Page
    dead: () => Page
  },
): void {
  fastify.withTypeProvider<ZodTypeProvider>().get(
    url,
    {
      config: { policy: SIGN_IN_PER_IP },
      schema: {
        ...doc,
        querystring: z.strictObject({ token: EmailedToken }),
        response: { 200: z.string().describe('text/html'), 400: z.string().describe('text/html') },
      },
    },
    async (request, reply) => {
      const { token } = request.query
      const found = await page.find(token)
      return found ? sendPage(reply, page.live(found, token), 200) : sendPage(reply, page.dead(), 400)
    },
  )
}
