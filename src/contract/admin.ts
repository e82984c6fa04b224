// The admin procedures (admin.<name>), the package's second entry (insight-accounts-contract/admin):
// an admin console adds them to the members' contract; a members' app never imports this file.
//
//   import { adminContract } from 'insight-accounts-contract/admin'
//   const admin: ContractRouterClient<typeof adminContract> = createORPCClient(link)
import { adminContract } from '../admin/contract.js'

export { adminContract }
export type AdminContract = typeof adminContract
