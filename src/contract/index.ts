// The business surface a member's front end calls, as an oRPC 1.14 contract router: what the
// package insight-accounts-contract (packages/contract, built from here) ships for typed procedures,
// with RPCLink at {base_url}/api/v1 or OpenAPILink over the REST view. Types and schemas only; no
// server code (src/shared/operation.ts). The admin procedures are a separate entry (./admin.ts),
// so an app for members does not ship their schemas.
//
//   import { contract } from 'insight-accounts-contract'
//   const client: ContractRouterClient<typeof contract> = createORPCClient(new RPCLink({ url, ... }))
import { compatibilityContract } from '../compatibility/contract.js'
import { consentContract } from '../consent/contract.js'
import { journalContract } from '../journal/contract.js'
import { paymentContract } from '../payment/contract.js'
import { personalDataContract } from '../personal-data/contract.js'
import { profileContract } from '../profile/contract.js'
import { usageContract } from '../usage/contract.js'

export const contract = {
  ...profileContract,
  ...usageContract,
  ...journalContract,
  ...compatibilityContract,
  ...paymentContract,
  ...consentContract,
  ...personalDataContract,
}

export type Contract = typeof contract
export type { OperationMeta } from '../shared/operation.js'
