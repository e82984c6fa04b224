// The GET of an emailed link that opens a page (a sign-in link, a security notice's "this wasn't
// me"): opening it changes nothing, since mail scanners open every link; only the page's button
// (shared/html-page.ts, tokenButtonPage) acts. No session: the link is opened wherever the mail is read.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { z } from 'zod'
import { type Page, sendPage } from '../../shared/html-page.js'
import { SIGN_IN_PER_IP } from '../../shared/route-policy.js'
import { EmailedToken, Status } from '../core/schemas.js'

/** The declaration of GET `path?token=`: a page, 200 for a live link and 400 for a dead one. */
export const linkPage = (route: { path: string; summary: string }) => ({
  method: 'GET' as const,
  ...route,
  policy: SIGN_IN_PER_IP,
  query: z.strictObject({ token: EmailedToken }),
  response: { 200: z.string().describe('text/html'), 400: z.string().describe('text/html') },
})

/** The declaration of the POST its page's button sends: the token; the link's work done is `{status: true}`. */
export const linkButton = (route: { path: string; summary: string; errors: readonly number[] }) => ({
  method: 'POST' as const,
  ...route,
  policy: SIGN_IN_PER_IP,
  body: z.strictObject({ token: EmailedToken }),
  response: { 200: Status },
})

/** Its handler: the `live` page of what `find` finds for the token, else the `dead` page. */
export function pageOfLink<Found>(page: {
  find: (token: string) => Promise<Found | null | undefined>
  live: (found: Found, token: string) => Page
  dead: () => Page
}) {
  return async (request: FastifyRequest<{ Querystring: { token: string } }>, reply: FastifyReply) => {
    const { token } = request.query
    const found = await page.find(token)
    return found ? sendPage(reply, page.live(found, token), 200) : sendPage(reply, page.dead(), 400)
  }
}
