import { z } from 'zod'

// The one error type. Every failure reaches the client as
// { code, status, message, data?, defined: false } through src/plugins/errors.ts.

export type ErrorCode =
  | 'VALIDATION_ERROR'
  | 'BAD_REQUEST'
  | 'UNAUTHORIZED'
  | 'INVALID_EMAIL_OR_PASSWORD'
  | 'INVALID_PASSWORD'
  | 'INVALID_TOKEN'
  | 'SIGN_IN_TO_CONFIRM_EMAIL_CHANGE'
  | 'EMAIL_CAN_NOT_BE_UPDATED'
  | 'CREDENTIAL_ACCOUNT_NOT_FOUND'
  | 'ACCOUNT_NOT_FOUND'
  | 'FAILED_TO_UNLINK_LAST_ACCOUNT'
  | 'PLAN_LIMIT_REACHED'
  | 'PAYMENT_REQUIRED'
  | 'FORBIDDEN'
  | 'ANONYMOUS_USERS_CANNOT_SIGN_IN_AGAIN_ANONYMOUSLY'
  | 'USER_IS_NOT_ANONYMOUS'
  | 'INVALID_ORIGIN'
  | 'MISSING_OR_NULL_ORIGIN'
  | 'CROSS_SITE_REQUEST'
  | 'INVALID_CALLBACK_URL'
  | 'PASSWORD_RESET_REQUIRED'
  | 'PASSWORD_COMPROMISED'
  | 'BANNED_USER'
  | 'EMAIL_NOT_VERIFIED'
  | 'EMAIL_NOT_PROVEN'
  | 'NOT_FOUND'
  | 'PROVIDER_NOT_FOUND'
  | 'CONFLICT'
  | 'ADDRESS_TAKEN'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'USER_ALREADY_EXISTS'
  | 'RATE_LIMITED'
  | 'INTERNAL_SERVER_ERROR'
  | 'BAD_GATEWAY'
  | 'SERVICE_UNAVAILABLE'
  // Two-factor authentication, in better-auth's twoFactor plugin's names
  | 'INVALID_TWO_FACTOR_COOKIE'
  | 'INVALID_CODE'
  | 'INVALID_BACKUP_CODE'
  | 'TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE'
  | 'TOTP_NOT_ENABLED'
  | 'TWO_FACTOR_NOT_ENABLED'
  | 'TWO_FACTOR_ALREADY_ENABLED'
  | 'TWO_FACTOR_REQUIRED'
  | 'ACCOUNT_TEMPORARILY_LOCKED'
  // Passkeys, in better-auth's passkey plugin's names (and its core's SESSION_NOT_FRESH)
  | 'SESSION_NOT_FRESH'
  | 'CHALLENGE_NOT_FOUND'
  | 'YOU_ARE_NOT_ALLOWED_TO_REGISTER_THIS_PASSKEY'
  | 'FAILED_TO_VERIFY_REGISTRATION'
  | 'PASSKEY_NOT_FOUND'
  | 'AUTHENTICATION_FAILED'
  | 'TOO_MANY_PASSKEYS'
  // Emailed one-time codes, in better-auth's emailOTP plugin's names
  | 'INVALID_OTP'
  | 'OTP_EXPIRED'
  | 'TOO_MANY_ATTEMPTS'
  // Phone numbers, in better-auth's phoneNumber plugin's names (its codes are the ones above)
  | 'INVALID_PHONE_NUMBER'
  | 'PHONE_NUMBER_EXIST'
  // oRPC's own, on the RPC surface: a GET on a procedure that changes state, a call without the
  // CSRF header when RPC_REQUIRE_CSRF_HEADER is on
  | 'METHOD_NOT_SUPPORTED'
  | 'CSRF_TOKEN_MISMATCH'
  // better-auth's admin plugin's (and its core's USER_NOT_FOUND), and support mode's refusal of a change
  | 'USER_NOT_FOUND'
  | 'YOU_ARE_NOT_ALLOWED_TO_LIST_USERS'
  | 'YOU_ARE_NOT_ALLOWED_TO_GET_USER'
  | 'YOU_ARE_NOT_ALLOWED_TO_CHANGE_USERS_ROLE'
  | 'YOU_ARE_NOT_ALLOWED_TO_SET_NON_EXISTENT_VALUE'
  | 'YOU_ARE_NOT_ALLOWED_TO_BAN_USERS'
  | 'YOU_ARE_NOT_ALLOWED_TO_LIST_USERS_SESSIONS'
  | 'YOU_ARE_NOT_ALLOWED_TO_REVOKE_USERS_SESSIONS'
  | 'YOU_ARE_NOT_ALLOWED_TO_DELETE_USERS'
  | 'YOU_ARE_NOT_ALLOWED_TO_IMPERSONATE_USERS'
  | 'YOU_CANNOT_IMPERSONATE_ADMINS'
  | 'IMPERSONATION_READ_ONLY'
  | 'IMPERSONATION_REFUSED'

export class AppError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly data?: Record<string, unknown>
  /** Seconds, sent as Retry-After and as `data.retryAfter` (plugins/errors.ts). */
  readonly retryAfter?: number

  constructor(
    status: number,
    code: ErrorCode,
    message: string,
    options: { data?: Record<string, unknown>; retryAfter?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause })
    this.name = 'AppError'
    this.status = status
    this.code = code
    this.data = options.data
    this.retryAfter = options.retryAfter
  }
}

/** One problem with an operation's input, at `path` inside the input, as zod reports its issues. */
export interface InputIssue {
  path: readonly PropertyKey[]
  message: string
}

/**
 * A 400 for input that passed its schema but breaks a rule the schema cannot hold (one that reads the
 * clock or the database). Each protocol words it as it words a failed schema: REST as
 * VALIDATION_ERROR with the request part in the path, RPC as oRPC's BAD_REQUEST (plugins/operations.ts).
 */
export class InputError extends AppError {
  constructor(readonly issues: readonly InputIssue[]) {
    const listed = issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }))
    const first = listed[0]
    super(400, 'VALIDATION_ERROR', first ? `Invalid ${first.path || 'input'}: ${first.message}` : 'Invalid input', {
      data: { issues: listed },
    })
    this.name = 'InputError'
  }
}

export const unauthorized = (message = 'Sign-in required') => new AppError(401, 'UNAUTHORIZED', message)
export const forbidden = (message = 'Forbidden') => new AppError(403, 'FORBIDDEN', message)
export const notFound = (what = 'Record') => new AppError(404, 'NOT_FOUND', `${what} not found`)
export const conflict = (message: string) => new AppError(409, 'CONFLICT', message)
export const serviceUnavailable = (message: string, retryAfter = 5) =>
  new AppError(503, 'SERVICE_UNAVAILABLE', message, { retryAfter })

/** The one error shape, as the OpenAPI document describes every error answer. */
export const ErrorSchema = z
  .object({
    code: z.string(),
    status: z.number().int(),
    message: z.string(),
    data: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('Details of the error; with Retry-After (429, 503), `retryAfter`: the same seconds, an integer'),
    // oRPC 1.14's error JSON: its OpenAPILink then reads code, status, message and data as they are.
    defined: z.literal(false),
  })
  .meta({ id: 'Error' })
