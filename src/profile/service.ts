// The profile of the signed-in user. There are no id parameters: every function takes the session's
// user, so nobody can read or change another user's profile through these routes.
import { json, type DB } from '../../db/index.js'
import { recordAudit } from '../shared/audit.js'
import type { SignedInUser } from '../auth/session/sessions.js'
import { unauthorized } from '../shared/errors.js'
import { toProfile, updateProfileRow, type ProfileChanges } from './queries.js'
import { canonicalLocale, ianaZone, type UpdateProfileInput } from './schemas.js'
import type { BirthPlace, Gender } from './tables.js'

export interface Profile {
  id: string
  email: string
  name: string
  image: string | null
  birthDate: string | null
  birthTime: string | null
  birthPlace: BirthPlace | null
  gender: Gender | null
  locale: string | null
  timezone: string | null
  createdAt: Date
  updatedAt: Date
}

/** Applies a partial update (undefined = keep, null = clear) and returns the profile as stored. */
export async function updateProfile(
  db: DB,
  user: SignedInUser,
  input: UpdateProfileInput,
  meta: { now: Date; ip: string | null },
): Promise<Profile> {
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

  const row = await db.transaction().execute(async (trx) => {
    const updated = await updateProfileRow(trx, userId, { ...changes, updated_at: meta.now })
    if (!updated) throw unauthorized()
    // Field names only: birth data is personal and has no place in the audit log.
    await recordAudit(trx, { actorId: userId, action: 'profile.updated', targetType: 'user', targetId: userId, ip: meta.ip, details: { fields } })
    return updated
  })
  return toProfile(row)
}
