// The whole surface the service serves, as the tests drive it: the members' contract and the admin
// one, the two entries of insight-accounts-contract (src/contract/index.ts and admin.ts).
import { adminContract } from '../../src/contract/admin.js'
import { contract as membersContract } from '../../src/contract/index.js'

export const contract = { ...membersContract, ...adminContract }
