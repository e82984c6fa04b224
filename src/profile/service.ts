// The profile of the signed-in user. There are no id parameters: every function takes the session's
// user id, so nobody can read or change another user's profile through these routes.
import { json, type DB } from '../../db/index.js'
import { recordAudit } from '../admin/audit.js'
import { unauthorized } from '../errors.js'
import { findProfileRow, updateProfileRow, type ProfileChanges, type ProfileRow } from './queries.js'
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

function toProfile(r: ProfileRow): Profile {
  return {
    id: r.id,
    email: r.email,
    name: r.name,
    image: r.image,
    birthDate: r.birth_date,
    birthTime: r.birth_time,
    birthPlace: r.birth_place,
    gender: r.gender,
    locale: r.locale,
    timezone: r.timezone,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }
}

export async function getProfile(db: DB, userId: string): Promise<Profile> {
  const row = await findProfileRow(db, userId)
  // The session was valid a moment ago; a user deleted since then has no profile to show.
  if (!row) throw unauthorized()
  return toProfile(row)
}

/** Applies a partial update (undefined = keep, null = clear) and returns the profile as stored. */
export async function updateProfile(
  db: DB,
  userId: string,
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
  if (fields.length === 0) return getProfile(db, userId)

  const row = await db.transaction().execute(async (trx) => {
    const updated = await updateProfileRow(trx, userId, { ...changes, updated_at: meta.now })
    if (!updated) throw unauthorized()
    // Field names only: birth data is personal and has no place in the audit log.
    await recordAudit(trx, { actorId: userId, action: 'profile.updated', targetType: 'user', targetId: userId, ip: meta.ip, details: { fields } })
    return updated
  })
  return toProfile(row)
}
