// Password hashing. New hashes: Argon2id (OWASP parameters) on the low-priority worker threads of
// hash-pool.ts, with a bounded queue. Kept from the previous system: scrypt (better-auth's format),
// bcrypt, Argon2 PHC. Weak unsalted digests are stored only wrapped in Argon2id and force a reset.
// Every operation names whom it is for (admission.ts): its budgets, its one place in flight per
// account and its turn in the queue are taken here, so no caller can skip them.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { isCommonPassword, passwordCompromised } from './common.js'
import type { HashPool } from './hash-pool.js'
import { clientKey } from '../../plugins/rate-limit.js'

/** Argon2id parameters of every new hash (OWASP); the bench measures hashing with the same. */
export const ARGON2 = { memoryCost: 19456, timeCost: 2, parallelism: 1 } as const
const SCRYPT = { N: 16384, r: 16, p: 1, dkLen: 64 } as const

/** Whom an Argon2 operation is for. */
export interface HashFor {
  /** `user:<id>` for an account; `email:<address> <client>` for an address without one (forAddress). */
  account: string
  /** The client's address; null on the command line. */
  ip: string | null
}

export const forUser = (ctx: { ip: string | null }, userId: string): HashFor => ({ account: `user:${userId}`, ip: ctx.ip })

/**
 * An address without an account (sign-up, an unknown email at sign-in), or one whose account is
 * not known yet (a reset by mailed code): counted per address and client, so strangers hashing for
 * an address never spend what its owner's client needs.
 */
export const forAddress = (ctx: { ip: string | null }, email: string): HashFor => ({
  account: `email:${email.toLowerCase()}${ctx.ip === null ? '' : ` ${clientKey(ctx.ip)}`}`,
  ip: ctx.ip,
})

/** Work that no client asks for (the import): no budget, no account, a queue of its own. */
export const OFFLINE: HashFor = Object.freeze({ account: 'offline', ip: null })

/**
 * Who lets an operation start (admission.ts's HashAdmission): the queue key its turn takes, and
 * the end of the account's operation in flight. Declared here, as this module needs it, so that
 * admission.ts imports this module and not the other way round.
 */
export interface Admission {
  admit(who: HashFor): Promise<{ queueKey: string; release(): void }>
}

export type WeakAlgorithm = 'md5' | 'sha1' | 'sha256'
const WEAK_PREFIX = '$weak-'

export class PasswordHasher {
  private dummy: Promise<string> | undefined

  /** Without an admission (the import), every operation goes straight to the queue. */
  constructor(
    readonly pool: HashPool,
    readonly admission?: Admission,
  ) {}

  /** Hashes a password the user already has (a rehash at sign-in, the import): never refused as weak. */
  hash(password: string, who: HashFor): Promise<string> {
    return this.admitted(who, (key) => this.pool.argon2Hash(password.normalize('NFKC'), ARGON2, key))
  }

  /**
   * Hashes a password the user chooses now (sign-up, reset, change, any other way to set one):
   * 400 PASSWORD_COMPROMISED for a common password, before any Argon2 work or database write.
   */
  hashNew(password: string, who: HashFor): Promise<string> {
    if (isCommonPassword(password)) return Promise.reject(passwordCompromised())
    return this.hash(password, who)
  }

  /** Argon2id over the unsalted legacy digest: the weak digest is never stored as it is. */
  async wrapWeakDigest(algorithm: WeakAlgorithm, hexDigest: string): Promise<string> {
    return `${WEAK_PREFIX}${algorithm}${await this.pool.argon2Hash(hexDigest.toLowerCase(), ARGON2, OFFLINE.account)}`
  }

  /** Whether a wrapped weak digest holds `hexDigest` (the import compares without the password). */
  weakDigestMatches(stored: string, algorithm: WeakAlgorithm, hexDigest: string): Promise<boolean> {
    const prefix = `${WEAK_PREFIX}${algorithm}`
    if (!stored.startsWith(`${prefix}$argon2id$`)) return Promise.resolve(false)
    return this.pool.argon2Verify(stored.slice(prefix.length), hexDigest.toLowerCase(), OFFLINE.account)
  }

  /** Constant-time verification against any stored format. */
  verify(stored: string, password: string, who: HashFor): Promise<boolean> {
    return this.admitted(who, (key) => verifyStored(this.pool, stored, password, key))
  }

  /**
   * Burns the same work as a real verification, for an unknown email or an account without a
   * password, so response time does not reveal which emails have accounts. It counts as one too.
   */
  verifyDummy(password: string, who: HashFor): Promise<false> {
    return this.admitted(who, async (key) => {
      this.dummy ??= this.pool.argon2Hash(randomBytes(16).toString('hex'), ARGON2, key)
      await this.pool.argon2Verify(await this.dummy, password.normalize('NFKC'), key)
      return false as const
    })
  }

  private async admitted<T>(who: HashFor, work: (queueKey: string) => Promise<T>): Promise<T> {
    if (!this.admission || who === OFFLINE) return work(OFFLINE.account)
    const admitted = await this.admission.admit(who)
    try {
      return await work(admitted.queueKey)
    } finally {
      admitted.release()
    }
  }
}

/** True when the stored hash is not a current Argon2id hash and should be replaced at sign-in. */
export function needsRehash(stored: string): boolean {
  return !(
    stored.startsWith('$argon2id$') && stored.includes(`m=${ARGON2.memoryCost},t=${ARGON2.timeCost},p=${ARGON2.parallelism}`)
  )
}

export function isWeakHash(stored: string): boolean {
  return stored.startsWith(WEAK_PREFIX)
}

/** better-auth's `salthex:keyhex` scrypt format, stored self-describing. */
export function scryptFromBetterAuth(saltAndKey: string): string | null {
  const match = /^([0-9a-f]+):([0-9a-f]{128})$/i.exec(saltAndKey)
  if (!match) return null
  return `$scrypt$n=${SCRYPT.N},r=${SCRYPT.r},p=${SCRYPT.p}$${match[1]!.toLowerCase()}$${match[2]!.toLowerCase()}`
}

export function isBcryptHash(stored: string): boolean {
  return /^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/.test(stored)
}

export function isArgon2Hash(stored: string): boolean {
  return /^\$argon2(id|i|d)\$/.test(stored)
}

function weakDigest(algorithm: WeakAlgorithm, password: string): string {
  return createHash(algorithm).update(password, 'utf8').digest('hex')
}

async function verifyStored(pool: HashPool, stored: string, password: string, key: string): Promise<boolean> {
  if (isArgon2Hash(stored)) return pool.argon2Verify(stored, password.normalize('NFKC'), key)
  if (stored.startsWith('$scrypt$')) return verifyScrypt(pool, stored, password, key)
  if (isBcryptHash(stored)) return pool.bcryptCompare(password, stored, key)
  if (stored.startsWith(WEAK_PREFIX)) {
    const match = /^\$weak-(md5|sha1|sha256)(\$argon2id\$.*)$/.exec(stored)
    if (!match) return false
    return pool.argon2Verify(match[2]!, weakDigest(match[1] as WeakAlgorithm, password), key)
  }
  return false
}

async function verifyScrypt(pool: HashPool, stored: string, password: string, key: string): Promise<boolean> {
  const match = /^\$scrypt\$n=(\d+),r=(\d+),p=(\d+)\$([0-9a-f]+)\$([0-9a-f]+)$/.exec(stored)
  if (!match) return false
  const [, n, r, p, salt, keyHex] = match
  const expected = Buffer.from(keyHex!, 'hex')
  const N = Number(n)
  const R = Number(r)
  // better-auth passes the hex salt as a string: its UTF-8 bytes are the salt.
  const derived = await pool.scrypt(
    password.normalize('NFKC'),
    salt!,
    expected.length,
    { N, r: R, p: Number(p), maxmem: 256 * N * R },
    key,
  )
  return derived.length === expected.length && timingSafeEqual(derived, expected)
}
