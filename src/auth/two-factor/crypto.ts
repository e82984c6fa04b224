// The secrets of two-factor authentication: the TOTP secret encrypted at rest, backup codes kept only
// as keyed hashes, and the TOTP codes themselves (RFC 6238 through otpauth, never our own HMAC code).
//
// Keys come from AUTH_SECRET through HKDF, one per purpose, so neither key is the cookie-signing key.
// AUTH_SECRET may hold several keys (rotation): the first encrypts and hashes, every one is tried on
// the way back, so a rotation does not lock anybody out of their authenticator or backup codes.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, randomInt } from 'node:crypto'
import { Secret, TOTP } from 'otpauth'

const SECRET_PURPOSE = 'insight/two-factor/totp-secret/v1'
const BACKUP_CODE_PURPOSE = 'insight/two-factor/backup-code/v1'
const FORMAT = 'v1'
const IV_BYTES = 12
const TAG_BYTES = 16

/** RFC 6238 with the parameters every authenticator app reads from the URI: SHA-1, 6 digits, 30 s. */
const TOTP_PARAMS = { algorithm: 'SHA1', digits: 6, period: 30 } as const
/** One time step either side of now: a code typed just before or after its 30 s turned over. */
const DRIFT_STEPS = 1
const CODE = /^\d{6}$/

export const BACKUP_CODE_COUNT = 10
const BACKUP_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

const derive = (secret: string, purpose: string): Buffer => Buffer.from(hkdfSync('sha256', secret, '', purpose, 32))

export class TwoFactorKeys {
  private readonly encryption: Buffer[]
  private readonly hashing: Buffer[]

  constructor(secrets: readonly string[]) {
    if (secrets.length === 0) throw new Error('TwoFactorKeys needs at least one secret')
    this.encryption = secrets.map((s) => derive(s, SECRET_PURPOSE))
    this.hashing = secrets.map((s) => derive(s, BACKUP_CODE_PURPOSE))
  }

  /** AES-256-GCM under the first key: `v1.` + base64url(iv | tag | ciphertext). */
  encrypt(plain: string): string {
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv('aes-256-gcm', this.encryption[0]!, iv)
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
    return `${FORMAT}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`
  }

  /** The plain text, under whichever configured key encrypted it; throws when none did. */
  decrypt(stored: string): string {
    const [format, payload] = stored.split('.', 2)
    if (format !== FORMAT || !payload) throw new Error('unknown two-factor secret format')
    const raw = Buffer.from(payload, 'base64url')
    const iv = raw.subarray(0, IV_BYTES)
    const tag = raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES)
    const body = raw.subarray(IV_BYTES + TAG_BYTES)
    for (const key of this.encryption) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv)
        decipher.setAuthTag(tag)
        return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8')
      } catch {
        // not this key: GCM's tag refuses it; try the next
      }
    }
    throw new Error('no configured AUTH_SECRET key decrypts this two-factor secret')
  }

  /** The hash a new backup code is stored under (the first key). */
  hashBackupCode(code: string): string {
    return createHmac('sha256', this.hashing[0]!).update(code).digest('hex')
  }

  /** The hashes a typed code may be stored under, one per configured key: looked up, never compared. */
  backupCodeCandidates(code: string): string[] {
    return this.hashing.map((key) => createHmac('sha256', key).update(code).digest('hex'))
  }
}

/** A new TOTP secret: 160 random bits (RFC 4226's recommendation), in base32 as the URI carries it. */
export const newTotpSecret = (): string => new Secret({ size: 20 }).base32

const totp = (secretBase32: string, label = 'account', issuer = '') =>
  new TOTP({ ...TOTP_PARAMS, issuer, label, secret: Secret.fromBase32(secretBase32) })

/** The otpauth:// URI an authenticator app scans. */
export const totpUri = (secretBase32: string, label: string, issuer: string): string =>
  totp(secretBase32, label, issuer).toString()

/**
 * The time step a code belongs to when it is valid at `now` (one step of drift either way), else
 * null. The caller refuses a step at or before the last one accepted, so a code works once.
 */
export function matchingStep(secretBase32: string, code: string, now: Date): number | null {
  if (!CODE.test(code)) return null
  const generator = totp(secretBase32)
  const timestamp = now.getTime()
  const delta = generator.validate({ token: code, timestamp, window: DRIFT_STEPS })
  return delta === null ? null : generator.counter({ timestamp }) + delta
}

/** Ten codes `XXXXX-XXXXX` of 10 letters and digits each (about 59 bits), from the CSPRNG. */
export function newBackupCodes(): string[] {
  return Array.from({ length: BACKUP_CODE_COUNT }, () => {
    let code = ''
    for (let i = 0; i < 10; i++) code += BACKUP_ALPHABET[randomInt(BACKUP_ALPHABET.length)]
    return `${code.slice(0, 5)}-${code.slice(5)}`
  })
}
