// The Database interface lists the tables of every domain; each domain declares its own tables.
import type { AdminTables } from '../src/admin/tables.js'
import type { AuthTables } from '../src/auth/tables.js'
import type { UsageTables } from '../src/usage/tables.js'

export interface Database extends AuthTables, AdminTables, UsageTables {}
