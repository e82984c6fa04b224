// The passkey routes' wire shapes: better-auth 1.6's passkey plugin's bodies and answers, with
// WebAuthn's JSON responses read strictly (known keys, base64url strings of bounded length) so a
// malformed or oversized one is a 400 before any verification runs.
import { z } from 'zod'
import { Id, SingleLine } from '../../shared/validation.js'

/** base64url without padding, as @simplewebauthn/browser encodes every binary field. */
const Base64Url = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[A-Za-z0-9_-]+$/, { message: 'Expected base64url' })

// A credential id is at most 1023 bytes (WebAuthn §5.8.3): 1364 characters of base64url.
const CredentialId = Base64Url(1364)
const Transport = z.enum(['ble', 'cable', 'hybrid', 'internal', 'nfc', 'smart-card', 'usb'])
const Attachment = z.enum(['platform', 'cross-platform'])
/** What a browser adds beside the response; read by nobody here, bounded all the same. */
const ClientExtensionResults = z.record(z.string().max(64), z.unknown()).optional()

/** A passkey's name: what its owner calls it. */
export const PasskeyName = SingleLine(1, 100)

/** A WebAuthn credential as the browser returns it (`PublicKeyCredential` JSON), with its ceremony's `response`. */
const credential = <R extends z.ZodRawShape>(response: R) =>
  z.strictObject({
    id: CredentialId,
    rawId: CredentialId,
    type: z.literal('public-key'),
    authenticatorAttachment: Attachment.optional(),
    clientExtensionResults: ClientExtensionResults,
    response: z.strictObject(response),
  })

export const RegistrationResponse = credential({
  clientDataJSON: Base64Url(8192),
  // With attestation "none", no certificate chain: a few hundred bytes.
  attestationObject: Base64Url(16384),
  authenticatorData: Base64Url(16384).optional(),
  transports: z.array(Transport).max(7).optional(),
  publicKeyAlgorithm: z.number().int().optional(),
  publicKey: Base64Url(8192).optional(),
})

export const AuthenticationResponse = credential({
  clientDataJSON: Base64Url(8192),
  authenticatorData: Base64Url(16384),
  // An RSA-4096 signature is 512 bytes; ECDSA and EdDSA ones are far shorter.
  signature: Base64Url(1024),
  // The WebAuthn user id: at most 64 bytes.
  userHandle: Base64Url(86).optional(),
})

export const RegisterOptionsQuery = z.strictObject({
  authenticatorAttachment: Attachment.optional(),
  /** Sent by better-auth's client with the passkey's name (which verify-registration takes); not used here. */
  name: SingleLine(1, 100).optional(),
})

export const VerifyRegistrationBody = z.strictObject({ response: RegistrationResponse, name: PasskeyName.optional() })
export const VerifyAuthenticationBody = z.strictObject({ response: AuthenticationResponse })
export const UpdatePasskeyBody = z.strictObject({ id: Id, name: PasskeyName })
export const DeletePasskeyBody = z.strictObject({ id: Id })

/** better-auth's passkey model as its owner sees it (plus when it was last used). */
export const PasskeySchema = z
  .object({
    id: z.string(),
    userId: z.string(),
    name: z.string().nullable(),
    credentialID: z.string().describe('base64url'),
    publicKey: z.string().describe('base64 of the COSE public key'),
    counter: z.number(),
    deviceType: z.string().describe('singleDevice or multiDevice'),
    backedUp: z.boolean(),
    transports: z.string().describe('comma-separated'),
    aaguid: z.string().nullable(),
    createdAt: z.date(),
    lastUsedAt: z.date().nullable(),
  })
  .meta({ id: 'Passkey' })

/** The options WebAuthn's navigator.credentials calls take, as @simplewebauthn/server makes them. */
export const CeremonyOptions = z.record(z.string(), z.unknown()).describe('PublicKeyCredential{Creation,Request}OptionsJSON')
