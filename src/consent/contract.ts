// Consent records: procedures consent.recordConsent and consent.getConsents, REST /api/v1/consent.
import { NoInput, operation } from '../shared/operation.js'
import { ConsentInput, ConsentRecordSchema, ConsentsSchema } from './schemas.js'

export const consentContract = operation.tag('consent').router({
  consent: {
    recordConsent: operation
      .route({ method: 'POST', path: '/consent', successStatus: 201, summary: 'Record a consent decision (append-only)' })
      .input(ConsentInput)
      .output(ConsentRecordSchema),

    getConsents: operation
      .route({ method: 'GET', path: '/consent', summary: 'Current consent per type and the full history' })
      .input(NoInput)
      .output(ConsentsSchema),
  },
})
