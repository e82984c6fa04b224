// The signed-in user's personal data: procedures me.exportMyData and me.deleteMyAccount, REST
// GET /api/v1/me/export and DELETE /api/v1/me.
import { z } from 'zod'
import { NoInput, operation } from '../contract/operation.js'
import { ErrorSchema } from '../shared/errors.js'
import { REVERIFIES_PASSWORD } from '../shared/route-policy.js'
import { DeleteAccountInput, PersonalDataSchema } from './schemas.js'

const tags = ['personal data']

export const personalDataContract = {
  me: {
    exportMyData: operation
      .route({
        method: 'GET',
        path: '/me/export',
        tags,
        summary: 'Every record held about the current user, as one JSON document (no secrets, no hashes)',
      })
      .meta({ download: 'personal-data.json' })
      .input(NoInput)
      .output(PersonalDataSchema),

    deleteMyAccount: operation
      .route({
        method: 'DELETE',
        path: '/me',
        successStatus: 204,
        successDescription: 'Deleted; the session cookie is cleared',
        tags,
        summary: 'Delete the account: the password again, or a sign-in in the last 10 minutes for accounts without one',
      })
      .meta({ policy: REVERIFIES_PASSWORD, errors: { 403: ErrorSchema } })
      .input(DeleteAccountInput)
      .output(z.void()),
  },
}
