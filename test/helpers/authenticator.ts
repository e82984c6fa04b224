// A software WebAuthn authenticator (ES256, attestation "none", discoverable credentials) behind
// the browser's navigator.credentials, so better-auth's passkey client runs in Node as it runs in
// a page: @simplewebauthn/browser calls navigator.credentials.create() and .get(), and this answers
// as a platform authenticator on the page `origin` would. Its knobs make the answers a real one
// would not give: no user verification, a counter that stands still, another user handle.
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto'
import { isoCBOR } from '@simplewebauthn/server/helpers'

interface Credential {
  id: Buffer
  rpId: string
  userHandle: Buffer
  privateKey: KeyObject
  counter: number
}

const FLAG_UP = 0x01
const FLAG_UV = 0x04
const FLAG_AT = 0x40

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest()
const bytes = (b: BufferSource) =>
  Buffer.from(b instanceof ArrayBuffer ? new Uint8Array(b) : new Uint8Array(b.buffer, b.byteOffset, b.byteLength))
const arrayBuffer = (b: Buffer): ArrayBuffer => new Uint8Array(b).buffer

export class SoftAuthenticator {
  readonly credentials: Credential[] = []
  /** The page the ceremonies run on: what clientDataJSON's origin says. */
  origin: string
  /** Whether the person is verified (PIN, biometrics): the UV flag. */
  userVerified = true
  /** Added to the signature counter at each assertion (0: an authenticator without a counter). */
  counterStep = 1
  /** When set, assertions carry this user handle instead of the credential's own. */
  userHandleOverride: Buffer | null = null

  constructor(origin: string) {
    this.origin = origin
  }

  private clientData(type: 'webauthn.create' | 'webauthn.get', challenge: BufferSource): Buffer {
    return Buffer.from(
      JSON.stringify({ type, challenge: bytes(challenge).toString('base64url'), origin: this.origin, crossOrigin: false }),
    )
  }

  private flags(extra = 0) {
    return FLAG_UP | (this.userVerified ? FLAG_UV : 0) | extra
  }

  /** navigator.credentials.create({publicKey}). */
  async create(options: CredentialCreationOptions): Promise<unknown> {
    const o = options.publicKey!
    const rpId = o.rp.id!
    const excluded = (o.excludeCredentials ?? []).map((c) => bytes(c.id).toString('base64url'))
    if (this.credentials.some((c) => c.rpId === rpId && excluded.includes(c.id.toString('base64url'))))
      throw new DOMException('The authenticator already holds a credential of this account', 'InvalidStateError')
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const jwk = publicKey.export({ format: 'jwk' })
    const cose = isoCBOR.encode(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
      ]),
    )
    const id = randomBytes(32)
    const credential: Credential = { id, rpId, userHandle: bytes(o.user.id), privateKey, counter: 0 }
    this.credentials.push(credential)
    const idLength = Buffer.alloc(2)
    idLength.writeUInt16BE(id.length)
    const authData = Buffer.concat([
      sha256(rpId),
      Buffer.from([this.flags(FLAG_AT)]),
      Buffer.alloc(4),
      Buffer.alloc(16), // AAGUID: none, as a privacy-preserving platform reports
      idLength,
      id,
      Buffer.from(cose),
    ])
    const attestationObject = isoCBOR.encode(
      new Map<string, unknown>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', new Uint8Array(authData)],
      ]) as never,
    )
    const clientDataJSON = this.clientData('webauthn.create', o.challenge)
    return {
      id: id.toString('base64url'),
      rawId: arrayBuffer(id),
      type: 'public-key',
      authenticatorAttachment: 'platform',
      response: {
        clientDataJSON: arrayBuffer(clientDataJSON),
        attestationObject: arrayBuffer(Buffer.from(attestationObject)),
        getTransports: () => ['internal'],
      },
      getClientExtensionResults: () => ({}),
    }
  }

  /** navigator.credentials.get({publicKey}): the newest credential of the relying party that is allowed. */
  async get(options: CredentialRequestOptions): Promise<unknown> {
    const o = options.publicKey!
    const allowed = (o.allowCredentials ?? []).map((c) => bytes(c.id).toString('base64url'))
    const credential = [...this.credentials]
      .reverse()
      .find((c) => c.rpId === o.rpId && (allowed.length === 0 || allowed.includes(c.id.toString('base64url'))))
    if (!credential) throw new DOMException('No credential of this relying party', 'NotAllowedError')
    return this.assertion(credential, o.challenge)
  }

  /** An assertion of `credential` for `challenge`, as a page on `origin` would get it. */
  assertion(credential: Credential, challenge: BufferSource) {
    credential.counter += this.counterStep
    const counter = Buffer.alloc(4)
    counter.writeUInt32BE(credential.counter)
    const authData = Buffer.concat([sha256(credential.rpId), Buffer.from([this.flags()]), counter])
    const clientDataJSON = this.clientData('webauthn.get', challenge)
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientDataJSON)]), credential.privateKey)
    return {
      id: credential.id.toString('base64url'),
      rawId: arrayBuffer(credential.id),
      type: 'public-key',
      authenticatorAttachment: 'platform',
      response: {
        clientDataJSON: arrayBuffer(clientDataJSON),
        authenticatorData: arrayBuffer(authData),
        signature: arrayBuffer(signature),
        userHandle: arrayBuffer(this.userHandleOverride ?? credential.userHandle),
      },
      getClientExtensionResults: () => ({}),
    }
  }

  /** This authenticator becomes the one behind navigator.credentials in this process. */
  install(): this {
    const g = globalThis as Record<string, unknown>
    g.PublicKeyCredential ??= class PublicKeyCredential {}
    const credentials = {
      create: (o: CredentialCreationOptions) => this.create(o),
      get: (o: CredentialRequestOptions) => this.get(o),
    }
    Object.defineProperty(globalThis, 'navigator', {
      value: { ...(g.navigator as object | undefined), credentials },
      configurable: true,
      writable: true,
    })
    return this
  }
}

/** A browser's JSON of a credential (what @simplewebauthn/browser posts): ArrayBuffers as base64url. */
export function credentialJson(credential: unknown): Record<string, unknown> {
  const c = credential as { id: string; rawId: ArrayBuffer; type: string; response: Record<string, ArrayBuffer> }
  const response = Object.fromEntries(
    Object.entries(c.response)
      .filter(([, v]) => v instanceof ArrayBuffer)
      .map(([k, v]) => [k, Buffer.from(v).toString('base64url')]),
  )
  return { id: c.id, rawId: Buffer.from(c.rawId).toString('base64url'), type: c.type, response }
}
