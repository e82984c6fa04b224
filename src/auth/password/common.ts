// Common passwords: a new password found among the 49,233 most used and breached passwords of
// @zxcvbn-ts/language-common is refused, offline and in memory (no password leaves the process).
// The list is all lower case; a password is compared NFKC-normalised, as it is hashed, lower-cased and
// without surrounding white space, so "Password1" and "password1 " are as refused as "password1".
import { dictionary } from '@zxcvbn-ts/language-common'
import { AppError } from '../../shared/errors.js'

let common: Set<string> | undefined

export function isCommonPassword(password: string): boolean {
  common ??= new Set(dictionary['passwords-common'])
  return common.has(password.normalize('NFKC').trim().toLowerCase())
}

/** better-auth's haveibeenpwned plugin's code and message. */
export const passwordCompromised = () =>
  new AppError(400, 'PASSWORD_COMPROMISED', 'The password you entered has been compromised. Please choose a different password.')
