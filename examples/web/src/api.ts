// src/api.ts
import { createORPCClient } from '@orpc/client'
import { RPCLink } from '@orpc/client/fetch'
import { BatchLinkPlugin, DedupeRequestsPlugin, SimpleCsrfProtectionLinkPlugin } from '@orpc/client/plugins'
import { type ContractRouterClient, inferRPCMethodFromContractRouter } from '@orpc/contract'
import { contract } from 'insight-accounts-contract'

const all = [{ condition: () => true, context: {} }] as const

export const api: ContractRouterClient<typeof contract> = createORPCClient(
  new RPCLink({
    url: `${import.meta.env.VITE_API_URL ?? 'http://localhost:8787'}/api/v1`,
    fetch: (request, init) => globalThis.fetch(request, { ...init, credentials: 'include' }),
    method: inferRPCMethodFromContractRouter(contract), // GET for the reads: cacheable, deduped
    plugins: [
      new DedupeRequestsPlugin({ groups: all }), // one request for identical GETs in flight
      new BatchLinkPlugin({ groups: all }), // calls made together go as one request
      new SimpleCsrfProtectionLinkPlugin(), // x-csrf-token on every call
    ],
  }),
)
