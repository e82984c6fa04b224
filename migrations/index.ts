// Every migration, in order. Listed explicitly so the same code runs from TypeScript and compiled JS.
import type { Migration } from 'kysely/migration'
import * as m0001 from './0001_foundation.js'
import * as m0002 from './0002_profile.js'
import * as m0003 from './0003_journal_compatibility.js'
import * as m0004 from './0004_payments.js'
import * as m0005 from './0005_admin_consent.js'
import * as m0006 from './0006_import.js'
import * as m0007 from './0007_purge.js'
import * as m0008 from './0008_session_cache.js'
import * as m0009 from './0009_two_factor.js'
import * as m0010 from './0010_ban.js'
import * as m0011 from './0011_former_emails.js'
import * as m0012 from './0012_payment_plan_expiry.js'
import * as m0013 from './0013_credential_epoch.js'
import * as m0014 from './0014_security_notices.js'
import * as m0015 from './0015_passkey.js'
import * as m0016 from './0016_consent_order.js'
import * as m0017 from './0017_payment_grant_order.js'
import * as m0018 from './0018_session_address_proof.js'
import * as m0019 from './0019_jwks.js'
import * as m0020 from './0020_guests.js'
import * as m0021 from './0021_impersonation.js'
import * as m0022 from './0022_phone_number.js'

export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0002_profile': m0002,
  '0003_journal_compatibility': m0003,
  '0004_payments': m0004,
  '0005_admin_consent': m0005,
  '0006_import': m0006,
  '0007_purge': m0007,
  '0008_session_cache': m0008,
  '0009_two_factor': m0009,
  '0010_ban': m0010,
  '0011_former_emails': m0011,
  '0012_payment_plan_expiry': m0012,
  '0013_credential_epoch': m0013,
  '0014_security_notices': m0014,
  '0015_passkey': m0015,
  '0016_consent_order': m0016,
  '0017_payment_grant_order': m0017,
  '0018_session_address_proof': m0018,
  '0019_jwks': m0019,
  '0020_guests': m0020,
  '0021_impersonation': m0021,
  '0022_phone_number': m0022,
}
