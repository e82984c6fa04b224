import { z } from 'zod'
import { SingleLine } from '../shared/validation.js'

export const MIN_BIRTH_DATE = '1900-01-01'

// Zone names match case-insensitively and are stored in the runtime's spelling ('asia/jakarta' ->
// 'Asia/Jakarta'); offsets such as '+07:00' and other non-IANA forms are refused.
const ZONES = new Map(['UTC', 'GMT', ...Intl.supportedValuesOf('timeZone')].map((name) => [name.toLowerCase(), name]))
const AREA_LOCATION = /^[A-Za-z]+(?:\/[A-Za-z0-9_+-]+)+$/

/** The IANA name in its canonical spelling, or undefined when it is not a zone this runtime knows. */
export function ianaZone(value: string): string | undefined {
  const listed = ZONES.get(value.toLowerCase())
  if (listed) return listed
  // Backward-compatible links ('Asia/Calcutta') are real IANA names that the list leaves out.
  if (!AREA_LOCATION.test(value)) return undefined
  try {
    new Intl.DateTimeFormat('en', { timeZone: value })
    return value
  } catch {
    return undefined
  }
}

const LANGUAGE_TAG = /^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*$/

/** The canonical BCP-47 form ('en-us' -> 'en-US'), or undefined when it is not a valid tag. */
export function canonicalLocale(value: string): string | undefined {
  if (!LANGUAGE_TAG.test(value)) return undefined
  try {
    return Intl.getCanonicalLocales(value)[0]
  } catch {
    return undefined
  }
}

const BirthPlaceSchema = z
  .strictObject({
    name: SingleLine(1, 200),
    latitude: z.number().min(-90).max(90),
    longitude: z.number().min(-180).max(180),
  })
  .meta({ id: 'BirthPlace', examples: [{ name: 'Yogyakarta, Indonesia', latitude: -7.7956, longitude: 110.3695 }] })

/** One example profile for the OpenAPI document (the update body and the profile share it); the tests' profile too. */
export const EXAMPLE_PROFILE = {
  name: 'Sari Wulandari',
  birthDate: '1994-08-17',
  birthTime: '06:30',
  birthPlace: { name: 'Yogyakarta, Indonesia', latitude: -7.7956, longitude: 110.3695 },
  gender: 'female',
  locale: 'id',
  timezone: 'Asia/Jakarta',
}

/**
 * The input of updateProfile. Every field is optional; nullable ones are cleared with null. "Not in
 * the future" for birthDate is the service's rule: "today" comes from the app's clock, which tests
 * inject, and the contract is the same for every app. No transforms: zod drops the examples of a
 * transforming schema from the OpenAPI document, so the service stores locale and time zone in
 * their canonical spelling.
 */
export const UpdateProfileInput = z
  .strictObject({
    name: SingleLine(1, 100),
    image: z
      .string()
      .trim()
      .max(2048)
      // https only, to a named host: the browser loads it on our pages (no mixed content, no intranet hosts).
      .pipe(z.url({ protocol: /^https$/, hostname: z.regexes.domain, message: 'Must be an https URL' }))
      .nullable(),
    birthDate: z
      .string()
      .trim()
      .pipe(z.iso.date({ message: 'Must be a real calendar date, YYYY-MM-DD' }))
      .describe('YYYY-MM-DD, from 1900-01-01 to today (UTC)')
      .refine((d) => d >= MIN_BIRTH_DATE, { message: `Must be ${MIN_BIRTH_DATE} or later` })
      .nullable(),
    birthTime: z
      .string()
      .trim()
      .regex(/^([01]\d|2[0-3]):[0-5]\d$/, { message: 'Must be HH:MM between 00:00 and 23:59' })
      .nullable(),
    birthPlace: BirthPlaceSchema.nullable(),
    gender: z.enum(['male', 'female', 'other']).nullable(),
    locale: z
      .string()
      .trim()
      .max(35)
      .refine((v) => canonicalLocale(v) !== undefined, { message: "Must be a BCP-47 language tag such as 'id' or 'en-US'" })
      .nullable(),
    timezone: z
      .string()
      .trim()
      .max(64)
      .refine((v) => ianaZone(v) !== undefined, { message: "Must be an IANA time zone such as 'Asia/Jakarta'" })
      .nullable(),
  })
  .partial()
  .meta({
    examples: [EXAMPLE_PROFILE, { birthTime: null, birthPlace: null }],
  })

export type UpdateProfileInput = z.infer<typeof UpdateProfileInput>

export const ProfileSchema = z
  .object({
    id: z.string(),
    email: z.string(),
    name: z.string(),
    image: z.string().nullable(),
    birthDate: z.string().nullable().describe('YYYY-MM-DD'),
    birthTime: z.string().nullable().describe('HH:MM, 24-hour, local time at the birth place'),
    birthPlace: z.object({ name: z.string(), latitude: z.number(), longitude: z.number() }).nullable(),
    gender: z.enum(['male', 'female', 'other']).nullable(),
    locale: z.string().nullable().describe('BCP-47 language tag'),
    timezone: z.string().nullable().describe('IANA time zone'),
    createdAt: z.date(),
    updatedAt: z.date(),
  })
  .meta({
    id: 'Profile',
    examples: [
      {
        id: 'q3Zt1mYV0bS4xRk9PaLw',
        email: 'sari@example.id',
        ...EXAMPLE_PROFILE,
        image: 'https://cdn.example.id/avatars/sari.png',
        createdAt: '2026-03-01T08:00:00.000Z',
        updatedAt: '2026-03-04T10:15:00.000Z',
      },
    ],
  })
