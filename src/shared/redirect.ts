// The one judge of every redirect target a client hands us (callbackURL, errorCallbackURL,
// newUserCallbackURL, redirectTo, returnUrl). It decides on what a browser will do with the value,
// never on its first characters: the WHATWG URL parser silently drops tab, CR and LF and reads a
// backslash as a slash, so "/\t/evil.example" and "/\\evil.example" both lead off-site. The value is
// resolved against the web front end's origin and only the resolved URL is used from then on.
import { AppError } from './errors.js'

export interface RedirectRules {
  /** Relative paths are pages of the web front end. */
  base: string
  trustedOrigins: ReadonlySet<string>
}

// C0 and C1 control characters, DEL and the backslash: refused rather than guessed at.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\\]/

const invalidCallbackUrl = (field: string) =>
  new AppError(403, 'INVALID_CALLBACK_URL', `${field} is not a URL on a trusted origin`)

/**
 * The absolute URL a browser would go to for `value`, or 403 INVALID_CALLBACK_URL when that is not
 * on a trusted origin. The result is ASCII (the serializer percent-encodes), so it is always a valid
 * header value and mail link.
 */
export function resolveRedirect(value: string, rules: RedirectRules, field: string): string {
  if (UNSAFE.test(value) || value.trim() !== value || value === '') throw invalidCallbackUrl(field)
  let url: URL
  try {
    url = new URL(value, rules.base)
  } catch {
    throw invalidCallbackUrl(field)
  }
  // No userinfo: "https://app.example@evil.example" reads as one host to a person, another to a parser.
  if (url.username !== '' || url.password !== '') throw invalidCallbackUrl(field)
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !rules.trustedOrigins.has(url.origin)) {
    throw invalidCallbackUrl(field)
  }
  // "/.//attacker.example" resolves to a trusted origin with the path "//attacker.example", which a
  // front end that routes by path alone would follow off-site.
  if (url.pathname.startsWith('//')) throw invalidCallbackUrl(field)
  return url.href
}

/** `resolveRedirect` for an optional field: undefined stays undefined. */
export function resolveOptionalRedirect(value: string | undefined, rules: RedirectRules, field: string): string | undefined {
  return value === undefined ? undefined : resolveRedirect(value, rules, field)
}

/** A redirect target (already judged) with the parameters set, their values percent-encoded by URLSearchParams. */
export function withQuery(url: string, params: Record<string, string>): string {
  const target = new URL(url)
  for (const [k, v] of Object.entries(params)) target.searchParams.set(k, v)
  return target.toString()
}
