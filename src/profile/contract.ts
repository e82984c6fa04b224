// The signed-in user's own profile: getProfile and updateProfile, procedures at /api/v1/getProfile
// and /api/v1/updateProfile (the specification's paths), REST at /api/v1/profile.
import { NoInput, operation } from '../shared/operation.js'
import { ProfileSchema, UpdateProfileInput } from './schemas.js'

export const profileContract = operation.tag('profile').router({
  getProfile: operation
    .route({
      method: 'GET',
      path: '/profile',
      summary: "The signed-in user's profile, including the birth data the analyses run on",
    })
    .input(NoInput)
    .output(ProfileSchema),

  updateProfile: operation
    .route({
      method: 'PATCH',
      path: '/profile',
      summary: 'Change some profile fields; omitted fields stay, null clears a nullable field',
      description:
        'birthDate is a real date from 1900-01-01 to today (UTC); birthTime HH:MM 00:00..23:59; timezone an ' +
        'IANA zone; latitude -90..90, longitude -180..180; image an https URL (<= 2048); strings are trimmed ' +
        '(name 1..100, birthPlace.name 1..200, locale a BCP-47 tag <= 35). email, role, plan and unknown ' +
        'keys are refused with 400.',
    })
    .input(UpdateProfileInput)
    .output(ProfileSchema),
})
