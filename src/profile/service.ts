// The profile of the signed-in user. There are no id parameters: every function takes the session's
// user, so nobody can read or change another user's profile through these routes.
import { json, type DB } from '../../db/index.js'
import { recordUserEvent } from '../shared/audit.js'
import type { Clock } from '../shared/clock.js'
import type { RequestContext } from '../shared/context.js'
import { unauthorized } from '../shared/errors.js'
import { todayUtc } from '../shared/dates.js'
import { invalidInput } from '../shared/validation.js'
import type { Profile, SignedInUser } from '../user/types.js'
import { updateProfileRow, type ProfileChanges } from './queries.js'
import { canonicalLocale, ianaZone, type UpdateProfileInput } from './schemas.js'

export interface ProfileDeps {
  db: DB
  clock: Clock
}

/** Applies a partial update (undefined = keep, null = clear) and returns the profile as stored. */
export async function updateProfile(
  deps: ProfileDeps,
  ctx: RequestContext,
  user: SignedInUser,
  input: UpdateProfileInput,
): Promise<Profile> {
  if (input.birthDate && input.birthDate > todayUtc(deps.clock.now()))
    throw invalidInput(['birthDate'], 'Must not be in the future')
  const changes: ProfileChanges = {
    name: input.name,
    image: input.image,
    birth_date: input.birthDate,
    birth_time: input.birthTime,
    birth_place: input.birthPlace === undefined ? undefined : input.birthPlace && json(input.birthPlace),
    gender: input.gender,
    locale: input.locale && canonicalLocale(input.locale),
    timezone: input.timezone && ianaZone(input.timezone),
  }
  const fields = Object.keys(input).filter((k) => input[k as keyof UpdateProfileInput] !== undefined)
  if (fields.length === 0) return user.profile
  const userId = user.id

  return deps.db.transaction().execute(async (trx) => {
    const updated = await updateProfileRow(trx, userId, { ...changes, updated_at: deps.clock.now() })
    if (!updated) throw unauthorized()
    // Field names only: birth data is personal and has no place in the audit log.
    await recordUserEvent(trx, ctx, userId, 'profile.updated', { fields })
    return updated
  })
}
