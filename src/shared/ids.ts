import { randomBytes } from 'node:crypto'

/** An opaque, URL-safe, 120-bit random id. */
export const newId = (): string => randomBytes(15).toString('base64url')
