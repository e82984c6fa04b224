// The Database interface lists the tables of every domain; each domain declares its own tables.
import type { AdminTables } from '../src/admin/tables.js'
import type { PasskeyTables } from '../src/auth/passkey/tables.js'
import type { SecurityTables } from '../src/auth/security/tables.js'
import type { AuthTables } from '../src/auth/core/tables.js'
import type { TokenTables } from '../src/auth/tokens/tables.js'
import type { CompatibilityTables } from '../src/compatibility/tables.js'
import type { ConsentTables } from '../src/consent/tables.js'
import type { ImportTables } from '../src/import/tables.js'
import type { JournalTables } from '../src/journal/tables.js'
import type { PaymentTables } from '../src/payment/tables.js'
import type { UsageTables } from '../src/usage/tables.js'
import type { UserTables } from '../src/user/tables.js'

export interface Database
  extends UserTables,
    AuthTables,
    AdminTables,
    UsageTables,
    JournalTables,
    CompatibilityTables,
    ConsentTables,
    PaymentTables,
    ImportTables,
    SecurityTables,
    PasskeyTables,
    TokenTables {}
