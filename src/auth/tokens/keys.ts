// The keys that sign the tokens (Ed25519, through jose), kept in the database so that every
// instance signs with the same key and serves the same key set, and rotated on a schedule.
//
// A private key is stored sealed: AES-256-GCM under a key derived from AUTH_SECRET by HKDF for this
// purpose alone (never the cookie-signing key), its key id bound in as associated data, so a
// database dump cannot sign and a sealed key cannot be moved onto another key id. AUTH_SECRET may
// list several keys: the first seals, each one is tried to open.
//
// Rotation: a new key is published (served at /api/auth/jwks) PUBLISH_AHEAD before it signs, so a
// verifier that cached the key set a little earlier meets a known key id; a key signs until its
// `expires_at` at the latest and is served until its last token expired.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose'
import type { DB } from '../../../db/index.js'
import type { Clock } from '../../shared/clock.js'
import { newId } from '../../shared/ids.js'
import type { MaybePromise } from '../../shared/maybe-async.js'
import { deleteRetiredKeys, insertKey, keysServedAfter, lockKeyWriters, type StoredKey } from './queries.js'

export const ALG = 'EdDSA'
const SEAL_PURPOSE = 'insight/tokens/signing-key/v1'
const SEAL_FORMAT = 'k1'
/** A new key is in the key set this long before it signs (longer than the set's Cache-Control max-age). */
export const PUBLISH_AHEAD_MS = 10 * 60_000
/** A verifier's clock may run this far behind ours: a key stays served this much longer. */
const CLOCK_SKEW_MS = 60_000
/** How often an instance looks for a newer key (another instance's rotation). */
const RECHECK_MS = 60_000

/** AES-256-GCM under HKDF(AUTH_SECRET), the key id as associated data: `k1.` base64url(iv | tag | body). */
export class KeySeal {
  private readonly keys: Buffer[]

  constructor(secrets: readonly string[]) {
    if (secrets.length === 0) throw new Error('KeySeal needs at least one secret')
    this.keys = secrets.map((s) => Buffer.from(hkdfSync('sha256', s, '', SEAL_PURPOSE, 32)))
  }

  seal(kid: string, plain: string): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.keys[0]!, iv).setAAD(Buffer.from(kid))
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
    return `${SEAL_FORMAT}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`
  }

  /** The plain text, or null when no configured key sealed it for this key id. */
  open(kid: string, sealed: string): string | null {
    const [format, payload] = sealed.split('.', 2)
    if (format !== SEAL_FORMAT || !payload) return null
    const raw = Buffer.from(payload, 'base64url')
    for (const key of this.keys) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12)).setAAD(Buffer.from(kid))
        decipher.setAuthTag(raw.subarray(12, 28))
        return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')
      } catch {
        // sealed under another key (or altered): GCM's tag refuses it
      }
    }
    return null
  }
}

export interface Signer {
  kid: string
  key: CryptoKey
}

export interface SigningKeyOptions {
  /** How long a key signs. */
  rotationMs: number
  /** The longest a token lives: a retired key is served this much longer. */
  tokenTtlMs: number
}

export class SigningKeys {
  private signer: { signer: Signer; recheckAt: number } | undefined
  private loading: Promise<Signer> | undefined

  constructor(
    private readonly db: DB,
    private readonly clock: Clock,
    private readonly seal: KeySeal,
    private readonly options: SigningKeyOptions,
  ) {}

  /** The key to sign with now: from memory, read again at most once a minute or when it must stop. */
  current(): MaybePromise<Signer> {
    const now = this.clock.now().getTime()
    if (this.signer && now < this.signer.recheckAt) return this.signer.signer
    this.loading ??= this.load().finally(() => {
      this.loading = undefined
    })
    return this.loading
  }

  /** The public keys a verifier needs: every key that signs, will sign soon, or signed a token still alive. */
  async keySet(): Promise<{ keys: JWK[] }> {
    const stored = await keysServedAfter(this.db, this.servedSince(this.clock.now()))
    if (stored.length === 0) await this.current() // the first key, so the set is never empty
    const keys = stored.length ? stored : await keysServedAfter(this.db, this.servedSince(this.clock.now()))
    return {
      keys: keys.map((k) => ({ ...(JSON.parse(k.publicKey) as JWK), alg: ALG, use: 'sig', kid: k.id })),
    }
  }

  /**
   * The maintenance task's turn: the next key is made once the newest one ends within `ahead` (the
   * time to the next run, plus the publication delay), so it is served before it signs; the keys
   * whose last token expired are deleted. Returns what it did.
   */
  async rotate(aheadMs: number): Promise<{ created: boolean; retired: number }> {
    const now = this.clock.now()
    const created = await this.createKeyUnless((live) =>
      live.some((k) => k.expiresAt.getTime() - now.getTime() > aheadMs + PUBLISH_AHEAD_MS),
    )
    const retired = await deleteRetiredKeys(this.db, this.servedSince(now))
    return { created, retired }
  }

  /** A key whose `expires_at` is past this was served long enough: its last token has expired. */
  private servedSince(now: Date): Date {
    return new Date(now.getTime() - this.options.tokenTtlMs - CLOCK_SKEW_MS)
  }

  private async load(): Promise<Signer> {
    const now = this.clock.now().getTime()
    let live = await this.liveKeys()
    if (!this.usable(live, now)) {
      // No key (the first token), or every key ended (the maintenance task is off): one now, signing at once.
      await this.createKeyUnless((keys) => this.usable(keys, this.clock.now().getTime()) !== undefined)
      live = await this.liveKeys()
    }
    const chosen = this.usable(live, now)
    if (!chosen) throw new Error('no signing key could be opened with the configured AUTH_SECRET')
    const signer = { kid: chosen.id, key: (await importJWK(JSON.parse(chosen.private), ALG)) as CryptoKey }
    const newer = live.find((k) => k.createdAt.getTime() > chosen.createdAt.getTime())
    const recheckAt = Math.min(
      now + RECHECK_MS,
      chosen.expiresAt.getTime(),
      newer ? newer.createdAt.getTime() + PUBLISH_AHEAD_MS : Number.POSITIVE_INFINITY,
    )
    this.signer = { signer, recheckAt }
    return signer
  }

  /** The keys that may still sign, newest first, opened (a key sealed under a dropped AUTH_SECRET is left out). */
  private async liveKeys(): Promise<(StoredKey & { private: string })[]> {
    const now = this.clock.now()
    const stored = await keysServedAfter(this.db, now)
    return stored.flatMap((k) => {
      const opened = this.seal.open(k.id, k.privateKey)
      return opened ? [{ ...k, private: opened }] : []
    })
  }

  /** The newest key published at least PUBLISH_AHEAD ago; the newest at all when none is (the first key). */
  private usable<K extends StoredKey>(live: K[], now: number): K | undefined {
    return live.find((k) => k.createdAt.getTime() <= now - PUBLISH_AHEAD_MS) ?? live[0]
  }

  /** Makes a key, unless `enough` holds for the live keys read under the writers' lock. */
  private async createKeyUnless(enough: (live: StoredKey[]) => boolean): Promise<boolean> {
    const { publicKey, privateKey } = await generateKeyPair(ALG, { crv: 'Ed25519', extractable: true })
    const kid = newId()
    const sealed = this.seal.seal(kid, JSON.stringify(await exportJWK(privateKey)))
    const publicJwk = JSON.stringify(await exportJWK(publicKey))
    return this.db.transaction().execute(async (trx) => {
      await lockKeyWriters(trx)
      const now = this.clock.now()
      const live = (await keysServedAfter(trx, now)).filter((k) => this.seal.open(k.id, k.privateKey) !== null)
      if (enough(live)) return false
      const expiresAt = new Date(now.getTime() + this.options.rotationMs)
      await insertKey(trx, { id: kid, publicKey: publicJwk, privateKey: sealed, createdAt: now, expiresAt })
      return true
    })
  }
}
