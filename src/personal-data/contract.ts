// The signed-in user's personal data: procedures me.exportMyData, me.listSecurityEvents and
// me.deleteMyAccount, REST GET /api/v1/me/export, GET /api/v1/me/security-events and DELETE /api/v1/me.
import { z } from 'zod'
import { ListSecurityEventsQuery, SecurityEventPageSchema } from '../auth/security/schemas.js'
import { failsWith, NoInput, operation } from '../shared/operation.js'
import { DATA_EXPORT, REVERIFIES_PASSWORD } from '../shared/route-policy.js'
import { DeleteAccountInput, PersonalDataSchema } from './schemas.js'

export const personalDataContract = operation.tag('personal data').router({
  me: {
    exportMyData: operation
      .route({
        method: 'GET',
        path: '/me/export',
        summary: 'Every record held about the current user, as one JSON document (no secrets, no hashes)',
      })
      .meta({ download: 'personal-data.json', policy: DATA_EXPORT, errors: failsWith(403) })
      .input(NoInput)
      .output(PersonalDataSchema),

    listSecurityEvents: operation
      .route({
        method: 'GET',
        path: '/me/security-events',
        summary:
          "The security activity of the user's own account, newest first, by cursor: sign-ins (browser, address, time), changes to the password, address, two-factor and provider links, sessions ended",
      })
      .input(ListSecurityEventsQuery)
      .output(SecurityEventPageSchema),

    deleteMyAccount: operation
      .route({
        method: 'DELETE',
        path: '/me',
        successStatus: 204,
        successDescription: 'Deleted; the session cookie is cleared',
        summary: 'Delete the account: the password again, or a sign-in in the last 10 minutes for accounts without one',
      })
      .meta({ policy: REVERIFIES_PASSWORD, errors: failsWith(403) })
      .input(DeleteAccountInput)
      .output(z.void()),
  },
})
