// Input rules shared by every domain, in the one error shape of a failed schema.
import { z } from 'zod'
import { AppError } from './errors.js'

/** A 400 VALIDATION_ERROR for a rule a schema cannot express (it depends on the clock or the database). */
export const invalidInput = (path: string, message: string) =>
  new AppError(400, 'VALIDATION_ERROR', `Invalid ${path}: ${message}`, { data: { issues: [{ path, message }] } })

/** An opaque id in a path: printable ASCII, as generated or as imported from the previous system. */
export const Id = z.string().regex(/^[\x21-\x7e]{1,200}$/, { message: 'Not an id' })

/** `/:id` path parameters. */
export const IdParams = z.strictObject({ id: Id })
