// The previous system's passwords: which ones are kept, which are hashed or wrapped at import (and
// then force a reset), and how a second run tells that the stored credential is still the same.
import { createHash } from 'node:crypto'
import {
  isArgon2Hash,
  OFFLINE,
  isBcryptHash,
  scryptFromBetterAuth,
  type PasswordHasher,
  type WeakAlgorithm,
} from '../auth/password/password.js'

export type CredentialSource =
  | { kind: 'none' }
  | { kind: 'kept'; algorithm: 'argon2' | 'scrypt' | 'bcrypt'; stored: string }
  | { kind: 'plain'; password: string }
  | { kind: 'weak'; algorithm: WeakAlgorithm; digest: string }

export type CredentialAlgorithm = 'argon2' | 'scrypt' | 'bcrypt' | WeakAlgorithm | 'plain' | 'none'

const PHC_ARGON2 = /^\$argon2(id|i|d)\$(v=\d+\$)?m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]+={0,2}$/
const WEAK_LENGTH: Record<WeakAlgorithm, number> = { md5: 32, sha1: 40, sha256: 64 }
const PLAIN_MAX = 1024

/** The stored form of an imported password, or the reason it cannot be imported. */
export function parseCredential(
  password: { algorithm: string; hash: string | null } | null,
): { source: CredentialSource; algorithm: CredentialAlgorithm } | { error: string } {
  if (!password || password.algorithm === 'none') return { source: { kind: 'none' }, algorithm: 'none' }
  const { algorithm, hash } = password
  if (hash === null || hash === '') return { error: `password.hash is missing for algorithm "${algorithm}"` }
  switch (algorithm) {
    case 'argon2':
      if (!isArgon2Hash(hash) || !PHC_ARGON2.test(hash)) return { error: 'password.hash is not an Argon2 PHC string' }
      return { source: { kind: 'kept', algorithm, stored: hash }, algorithm }
    case 'scrypt': {
      const stored = scryptFromBetterAuth(hash)
      if (!stored) return { error: 'password.hash is not scrypt "salthex:keyhex" (64-byte key)' }
      return { source: { kind: 'kept', algorithm, stored }, algorithm }
    }
    case 'bcrypt':
      if (!isBcryptHash(hash)) return { error: 'password.hash is not a bcrypt hash ($2a$/$2b$/$2y$)' }
      return { source: { kind: 'kept', algorithm, stored: hash }, algorithm }
    case 'md5':
    case 'sha1':
    case 'sha256': {
      const digest = hash.toLowerCase()
      if (!new RegExp(`^[0-9a-f]{${WEAK_LENGTH[algorithm]}}$`).test(digest)) {
        return { error: `password.hash is not a ${algorithm} hex digest (${WEAK_LENGTH[algorithm]} hex characters)` }
      }
      return { source: { kind: 'weak', algorithm, digest }, algorithm }
    }
    case 'plain':
      if (hash.length > PLAIN_MAX) return { error: `plain password longer than ${PLAIN_MAX} characters` }
      return { source: { kind: 'plain', password: hash }, algorithm }
    default:
      return { error: `unsupported password.algorithm "${algorithm}"` }
  }
}

/** Plain and weak passwords are never trusted as they are: the user must choose a new one. */
export const requiresReset = (source: CredentialSource): boolean => source.kind === 'plain' || source.kind === 'weak'

/** What to store: kept hashes as they are, plain text hashed, weak digests wrapped in Argon2id. */
export function storedCredential(hasher: PasswordHasher, source: CredentialSource): Promise<string | null> {
  switch (source.kind) {
    case 'none':
      return Promise.resolve(null)
    case 'kept':
      return Promise.resolve(source.stored)
    case 'plain':
      return hasher.hash(source.password, OFFLINE)
    case 'weak':
      return hasher.wrapWeakDigest(source.algorithm, source.digest)
  }
}

/**
 * True when `stored` is what importing `source` would produce. Kept hashes compare as strings;
 * plain and wrapped ones are salted, so they are verified (Argon2 work, in parallel by the caller).
 */
export async function storedMatches(hasher: PasswordHasher, source: CredentialSource, stored: string | null): Promise<boolean> {
  switch (source.kind) {
    case 'none':
      return stored === null
    case 'kept':
      return stored === source.stored
    case 'plain':
      return stored?.startsWith('$argon2id$') === true && (await hasher.verify(stored, source.password, OFFLINE))
    case 'weak': {
      // The wrapped digest is verified against the digest itself: the password is not known here.
      return stored !== null && hasher.weakDigestMatches(stored, source.algorithm, source.digest)
    }
  }
}

/** SHA-256 of a stored hash (salted, so its digest reveals nothing), or null for no credential. */
export const digestOfStored = (stored: string | null): string | null =>
  stored === null ? null : createHash('sha256').update(stored).digest('hex')
