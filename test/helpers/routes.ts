// Every route of a built app, read from Fastify's router itself (its printout of the route tree),
// never from a list kept by hand, with the policy each route declared, a concrete URL to call it by,
// and other spellings of that URL.
import type { FastifyInstance } from 'fastify'
import type { RoutePolicy } from '../../src/shared/route-policy.js'

export interface TableRoute {
  method: string
  /** The route's pattern, as the router holds it. */
  pattern: string
  /** The pattern with each parameter filled in. */
  url: string
  policy: RoutePolicy
  isPublic: boolean
  stateChanging: boolean
  /** On an oRPC procedure's route, its path ("journal.createEntry"): its errors come in the RPC envelope. */
  procedure?: string
  /** On a procedure's route: whether the procedure is declared GET (a read, whatever method carries it). */
  procedureReads?: boolean
  /** A procedure's batch route (`<procedure's URL>/__batch__`); `procedure` names the procedure. */
  batch: boolean
}

/** The error code of an answer: from the one error shape, or from inside the RPC envelope on a procedure's route. */
export function errorCodeOf(body: unknown, route: { procedure?: string }): unknown {
  const shape = route.procedure ? (body as { json?: unknown } | null)?.json : body
  return (shape as { code?: unknown } | null | undefined)?.code
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** [method, path] of every route in the router, from `printRoutes({ commonPrefix: false })`. */
export function routerEntries(app: FastifyInstance): Array<[string, string]> {
  const entries: Array<[string, string]> = []
  const parents: string[] = []
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/u.exec(line)
    if (!match) continue
    const depth = [...match[1]!].length / 4
    const path = (parents[depth - 1] ?? '') + match[2]!
    parents[depth] = path
    parents.length = depth + 1
    for (const method of match[3]?.split(', ') ?? []) entries.push([method, path])
  }
  return entries
}

export function routeTable(app: FastifyInstance): TableRoute[] {
  const declared = new Map<string, RoutePolicy>()
  const procedures = new Map<string, string>()
  const batches = new Set<string>()
  const reads = new Map<string, boolean>()
  for (const route of app.registeredRoutes) {
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
      declared.set(`${method} ${route.url}`, route.config?.policy ?? {})
      if (route.config?.procedure) procedures.set(`${method} ${route.url}`, route.config.procedure)
      if (route.config?.batch) batches.add(`${method} ${route.url}`)
      if (route.config?.procedureReads !== undefined) reads.set(`${method} ${route.url}`, route.config.procedureReads)
    }
  }
  return routerEntries(app).map(([method, printed]) => {
    let pattern = printed
    // A route registered as "/" under a prefix is also routed with the slash dropped or added; it
    // shares its twin's options, so its twin's policy.
    let policy =
      declared.get(`${method} ${pattern}`) ??
      declared.get(`${method} ${pattern.replace(/\/$/, '')}`) ??
      declared.get(`${method} ${pattern}/`)
    if (!policy && pattern.endsWith('*')) {
      // The printout drops the static part before a wildcard ("static/*" prints as "*" under its
      // parent): take the one announced wildcard route below that parent.
      const below = [...declared.keys()].filter((k) => k.startsWith(`${method} ${pattern.slice(0, -1)}`) && k.endsWith('*'))
      if (below.length === 1) {
        policy = declared.get(below[0]!)
        pattern = below[0]!.slice(method.length + 1)
      }
    }
    if (!policy) throw new Error(`${method} ${pattern} is routed but was never announced to onRoute`)
    return {
      method,
      pattern,
      url: pattern.replace(/:[A-Za-z0-9_]+/g, 'x0000000000000000').replace(/\*$/, 'index.html'),
      policy,
      isPublic: policy.access === 'public',
      stateChanging: STATE_CHANGING.has(method),
      procedure: procedures.get(`${method} ${pattern}`),
      procedureReads: reads.get(`${method} ${pattern}`),
      batch: batches.has(`${method} ${pattern}`),
    }
  })
}

const percentEncode = (c: string) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`

/**
 * The same path spelled as an attacker would: a percent-encoded letter in the first segment, in
 * the last segment, and every letter encoded in lower-case hex. The router decodes all of them to
 * the same route.
 */
export function otherSpellings(url: string): string[] {
  const firstLetter = url.search(/[a-z]/i)
  const lastLetter = url.length - 1 - [...url].reverse().join('').search(/[a-z]/i)
  const at = (i: number) => url.slice(0, i) + percentEncode(url[i]!) + url.slice(i + 1)
  const everyLetter = url.replace(/[a-z]/gi, (c) => percentEncode(c).toLowerCase())
  return [...new Set([at(firstLetter), at(lastLetter), everyLetter])]
}
