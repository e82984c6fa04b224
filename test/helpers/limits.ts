// Rate limits no run reaches, so the tests and the bench measure the routes, not the limiter (every
// client here is one IP). Tests of the limits set their own. Used by tests and the bench: no tap here.
export const GENEROUS_RATE_LIMITS: Record<string, string> = {
  RATE_LIMIT_GLOBAL_PER_MINUTE: '1000000',
  RATE_LIMIT_SIGN_IN_IP_PER_MINUTE: '1000000',
  RATE_LIMIT_SIGN_IN_EMAIL_PER_MINUTE: '1000000',
  RATE_LIMIT_SIGN_UP_IP_PER_MINUTE: '1000000',
  RATE_LIMIT_MAIL_PER_HOUR: '1000000',
  RATE_LIMIT_MAIL_PER_ADDRESS_PER_HOUR: '1000000',
  RATE_LIMIT_CODES_PER_CLIENT_PER_DAY: '1000000',
  RATE_LIMIT_CODES_PER_ADDRESS_PER_DAY: '1000000',
  RATE_LIMIT_HASHES_PER_ACCOUNT_PER_MINUTE: '1000000',
  RATE_LIMIT_HASHES_PER_IP_PER_MINUTE: '1000000',
}
