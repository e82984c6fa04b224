// The one place that reads the environment. Everything else receives a `Config`.
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { isIP } from 'node:net'
import { z } from 'zod'

const bool = z.enum(['true', 'false', '1', '0', '']).transform((v) => v === 'true' || v === '1')
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max)
const optionalString = z
  .string()
  .transform((v) => (v.trim() === '' ? undefined : v.trim()))
  .optional()
/** proxy-addr's names for address ranges, accepted in TRUST_PROXY beside addresses and CIDR ranges. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/**
 * Which proxies' X-Forwarded-For to believe: none, or the proxies listed by address. Never every
 * hop (`true`): the left-most entries are whatever the client wrote, so it could pick its own IP
 * for every per-IP budget. Nor a count of hops: Fastify 5 trusts nothing for a count, since a
 * client that reaches the service directly could then write the header itself.
 */
const proxyTrust = z.string().transform((value, ctx): false | string[] => {
  const v = value.trim()
  if (v === '' || v === 'false') return false
  const list = v.split(',').map((a) => a.trim())
  for (const a of list) {
    const [ip, prefix, ...rest] = a.split('/')
    const family = isIP(ip ?? '')
    // A /0 range is every address: the client's own header would be believed, as with `true`.
    const prefixOk =
      prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) >= 1 && Number(prefix) <= (family === 6 ? 128 : 32))
    if (!PROXY_RANGE_NAMES.has(a) && (family === 0 || !prefixOk || rest.length > 0)) {
      ctx.addIssue({
        code: 'custom',
        message: `"${a}" is not a proxy address: give the addresses or CIDR ranges of the proxies in front (or loopback, linklocal, uniquelocal), comma-separated; true and hop counts would let a client choose its own IP`,
      })
      return z.NEVER
    }
  }
  return list
})
const httpUrl = z.url({ protocol: /^https?$/ }).transform((v) => v.replace(/\/+$/, ''))

const originList = z.string().transform((value, ctx) => {
  const origins: string[] = []
  for (const raw of value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    try {
      const url = new URL(raw)
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('scheme')
      origins.push(url.origin)
    } catch {
      ctx.addIssue({ code: 'custom', message: `"${raw}" is not an http(s) origin` })
    }
  }
  return origins
})

const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: int(0, 65535).default(8787),
  HOST: z.string().min(1).default('127.0.0.1'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  TRUST_PROXY: proxyTrust.default(false),

  DATABASE_URL: optionalString,
  PGLITE_DIR: z.string().min(1).default('./data'),
  DATABASE_POOL_SIZE: int(1, 200).default(20),

  AUTH_SECRET: optionalString,
  AUTH_URL: optionalString.pipe(httpUrl.optional()),
  AUTH_COOKIE_DOMAIN: optionalString,
  AUTH_TRUSTED_ORIGIN: originList.default([]),
  WEB_ORIGIN: optionalString.pipe(httpUrl.optional()),
  SESSION_TTL_DAYS: int(1, 365).default(30),
  SESSION_CACHE_SIZE: int(0, 10_000_000).default(100_000),
  PURGE_INTERVAL_SECONDS: int(0, 86400).default(3600),
  // Tokens for other services (src/auth/tokens/): at most 15 minutes, so revocation reaches them soon.
  JWT_ISSUER: optionalString,
  JWT_AUDIENCE: optionalString,
  JWT_TTL_SECONDS: int(30, 900).default(900),
  JWT_KEY_ROTATION_DAYS: int(1, 365).default(30),
  JWT_INCLUDE_EMAIL: bool.default(false),
  GUEST_TTL_DAYS: int(1, 365).default(30),
  REQUIRE_EMAIL_VERIFICATION: bool.default(false),
  BOOTSTRAP_OWNER_EMAIL: optionalString.pipe(z.email().optional()),
  REQUIRE_ADMIN_TWO_FACTOR: bool.default(false),
  IMPERSONATION_ALLOWS_WRITES: bool.default(false),
  RPC_REQUIRE_CSRF_HEADER: bool.default(false),
  PASSKEY_RP_ID: optionalString.pipe(
    z
      .string()
      .regex(/^[a-z0-9.-]+$/i, 'a host name, without scheme or port')
      .optional(),
  ),
  PASSKEY_ORIGINS: originList.default([]),
  PHONE_SIGN_IN: bool.default(false),
  PHONE_SENDER: z.enum(['log']).default('log'),

  IDP_ISSUER: httpUrl.default('https://accounts.google.com'),
  IDP_CLIENT_ID: optionalString,
  IDP_CLIENT_SECRET: optionalString,

  SMTP_URL: optionalString.pipe(z.url({ protocol: /^smtps?$/ }).optional()),
  MAIL_FROM: z.string().min(3).default('Insight <no-reply@localhost>'),

  REDIS_URL: optionalString.pipe(z.url({ protocol: /^rediss?$/ }).optional()),
  REDIS_KEY_PREFIX: z.string().max(64).default('insight:'),
  // Up to 100 million: one process answers over a million requests a minute, and many users may share an IP (a NAT).
  RATE_LIMIT_GLOBAL_PER_MINUTE: int(1, 100_000_000).default(600),
  RATE_LIMIT_SIGN_IN_IP_PER_MINUTE: int(1, 1_000_000).default(10),
  RATE_LIMIT_SIGN_IN_EMAIL_PER_MINUTE: int(1, 1_000_000).default(5),
  RATE_LIMIT_SIGN_UP_IP_PER_MINUTE: int(1, 1_000_000).default(5),
  RATE_LIMIT_GUEST_IP_PER_MINUTE: int(1, 1_000_000).default(10),
  RATE_LIMIT_MAIL_PER_HOUR: int(1, 1_000_000).default(3),
  RATE_LIMIT_MAIL_PER_ADDRESS_PER_HOUR: int(1, 1_000_000).default(10),
  RATE_LIMIT_CODES_PER_CLIENT_PER_DAY: int(1, 1_000_000).default(6),
  RATE_LIMIT_CODES_PER_ADDRESS_PER_DAY: int(1, 1_000_000).default(24),
  RATE_LIMIT_PASSWORD_CHECKS_PER_MINUTE: int(1, 1_000_000).default(5),
  RATE_LIMIT_HASHES_PER_ACCOUNT_PER_MINUTE: int(1, 1_000_000).default(10),
  RATE_LIMIT_HASHES_PER_IP_PER_MINUTE: int(1, 1_000_000).default(30),

  HASH_MAX_CONCURRENCY: int(1, 256).optional(),
  HASH_MAX_QUEUE: int(0, 10_000).default(64),
  BODY_LIMIT_BYTES: int(1024, 10 * 1024 * 1024).default(64 * 1024),

  PAYMENT_GATEWAY: z.enum(['sandbox', 'stripe', 'midtrans', '']).optional(),
  STRIPE_SECRET_KEY: optionalString,
  STRIPE_WEBHOOK_SECRET: optionalString,
  STRIPE_API_BASE: optionalString.pipe(httpUrl.optional()),
  MIDTRANS_SERVER_KEY: optionalString,
  MIDTRANS_PRODUCTION: bool.default(false),
  MIDTRANS_API_BASE: optionalString.pipe(httpUrl.optional()),

  METRICS_TOKEN: optionalString,
  // Unset or empty: served outside production only.
  API_DOCS: z
    .enum(['true', 'false', '1', '0', ''])
    .optional()
    .transform((v) => (v === undefined || v === '' ? undefined : v === 'true' || v === '1')),
})

/** Every variable the service reads (.env.example and docs/configuration.md list exactly these). */
export const ENV_VARIABLES: readonly string[] = Object.keys(envSchema.shape)

export interface Config {
  env: 'development' | 'production' | 'test'
  port: number
  host: string
  logLevel: string
  /** Fastify's trustProxy: off, or the addresses of the proxies in front. */
  trustProxy: false | string[]
  database: { url?: string; pgliteDir: string; poolSize: number }
  auth: {
    /** First key signs, every key verifies (rotation). */
    secrets: string[]
    baseUrl: string
    cookieDomain?: string
    secureCookies: boolean
    trustedOrigins: string[]
    webOrigin: string
    sessionTtlDays: number
    /** Sessions kept in memory per process (auth/session/cache.ts); 0 turns the cache off. */
    sessionCacheSize: number
    requireEmailVerification: boolean
    bootstrapOwnerEmail?: string
    /** Admin and owner routes refuse a session that did not pass a second factor. */
    requireAdminTwoFactor: boolean
    /** A guest nobody can reach (no live session) and untouched this many days is purged with its data (src/auth/guests/). */
    guestTtlDays: number
    /** An administrator impersonating a member may change state in their name (off: support mode is read-only). */
    impersonationAllowsWrites: boolean
    /** WebAuthn's relying party (src/auth/passkey/): its id, and the page origins its ceremonies may run on. */
    passkey: { rpId: string; origins: string[] }
    /** Sign-in by a code sent to a phone number (src/auth/phone/): its routes exist only when on; the module that sends. */
    phone: { signIn: boolean; sender: 'log' }
  }
  /** Seconds between purges of expired sessions and verification tokens; 0 disables them. */
  purge: { intervalSeconds: number }
  /** The tokens other services verify (src/auth/tokens/): who issues them, for whom, how long they live. */
  jwt: {
    issuer: string
    audience: string
    /** At most 900: a revoked session's last token outlives it by this much at most. */
    ttlSeconds: number
    /** A signing key signs this many days, then the next one takes over. */
    keyRotationDays: number
    /** The user's address goes into the token (`email`, `email_verified`): off unless configured. */
    includeEmail: boolean
  }
  idp: { issuer: string; clientId?: string; clientSecret?: string }
  mail: { smtpUrl?: string; from: string }
  redisUrl?: string
  /** Prefix of every Redis key, so several deployments (or test runs) can share one Redis. */
  redisKeyPrefix: string
  rateLimit: {
    globalPerMinute: number
    signInIpPerMinute: number
    signInEmailPerMinute: number
    signUpIpPerMinute: number
    /** Guests made per IP (sign-in/anonymous). */
    guestIpPerMinute: number
    /** Mails per hour to one address asked for by one client (IP, or IPv6 /64). */
    mailPerHour: number
    /** Codes mailed per hour to one address, every unknown client together (links are not held to it). */
    mailPerAddressPerHour: number
    /** Codes mailed per day to one address asked for by one client. */
    codesPerClientPerDay: number
    /** Codes mailed per day to one address, every unknown client together. */
    codesPerAddressPerDay: number
    passwordChecksPerMinute: number
    /** Argon2 operations (any hash or password check) per account, or per address without one. */
    hashesPerAccountPerMinute: number
    /** Argon2 operations per client IP. */
    hashesPerIpPerMinute: number
  }
  hashing: { maxConcurrency?: number; maxQueue: number }
  bodyLimit: number
  /**
   * oRPC's SimpleCsrfProtectionHandlerPlugin rule on the procedure routes: every call (batched
   * ones too) carries `x-csrf-token: orpc`, as SimpleCsrfProtectionLinkPlugin sends it.
   */
  rpc: { requireCsrfHeader: boolean }
  payments: {
    gateway?: 'sandbox' | 'stripe' | 'midtrans'
    stripe: { secretKey?: string; webhookSecret?: string; apiBase?: string }
    midtrans: { serverKey?: string; production: boolean; apiBase?: string }
  }
  metricsToken?: string
  /** GET /api/v1/openapi.json and the reference page at /api/v1/docs are served (API_DOCS; off in production by default). */
  apiDocs: boolean
}

export class ConfigError extends Error {}

/**
 * The process's environment, with the variables of a `.env` file in the working directory added
 * when there is one; a variable set in the environment wins over the file's. For the server and
 * the command line (tests pass their own environment to loadConfig).
 */
export function readEnvironment(file = '.env'): Record<string, string | undefined> {
  if (existsSync(file)) process.loadEnvFile(file)
  return process.env
}

/** PGLITE_DIR's value for an embedded database that lives in memory only. */
const IN_MEMORY = 'memory://'

export interface LoadOptions {
  /**
   * Outside production, without AUTH_SECRET: the key kept in the data folder (PGLITE_DIR), made on
   * first use, so a restart of `npm run dev` keeps everyone signed in. Without it, a random key.
   */
  keptDevSecret?: (dataDir: string) => { secret: string; file: string }
}

/** Parses an environment into a Config. Throws ConfigError with one line naming the variable. */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  warn: (message: string) => void = () => {},
  options: LoadOptions = {},
): Config {
  // An empty variable counts as unset (`PORT=` in an env file, `${X:-}` in compose): without
  // this, PORT= would coerce to 0 and listen on a random port.
  const given = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v.trim() !== ''))
  const parsed = envSchema.safeParse(given)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!
    const name = String(issue.path[0] ?? 'environment')
    throw new ConfigError(`Invalid ${name}: ${issue.message}`)
  }
  const e = parsed.data
  const production = e.NODE_ENV === 'production'

  let secrets = (e.AUTH_SECRET ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  if (production && (secrets.length === 0 || secrets.some((s) => s.length < 32))) {
    throw new ConfigError('Invalid AUTH_SECRET: required in production, each key at least 32 characters')
  }
  // An in-memory database keeps nothing across a restart, and neither does its key: "memory://" is
  // no folder to write a key into (it would land in ./memory:/, beside the sources).
  if (secrets.length === 0 && options.keptDevSecret && e.PGLITE_DIR !== IN_MEMORY) {
    const kept = options.keptDevSecret(e.PGLITE_DIR)
    warn(`AUTH_SECRET is not set: sessions are signed with the development key kept in ${kept.file} (never in production)`)
    secrets = [kept.secret]
  } else if (secrets.length === 0) {
    warn('AUTH_SECRET is not set: a random key was generated, sessions will not survive a restart')
    secrets = [randomBytes(32).toString('base64url')]
  }

  let baseUrl = e.AUTH_URL
  if (!baseUrl) {
    // The port actually served: a browser following the start-up lines lands where its cookie belongs.
    baseUrl = `http://localhost:${e.PORT}`
    warn(`AUTH_URL is not set: falling back to ${baseUrl}, the OAuth callback may fail`)
  }
  const webOrigin = e.WEB_ORIGIN ? new URL(e.WEB_ORIGIN).origin : 'http://localhost:3000'
  const trustedOrigins = [...new Set([new URL(baseUrl).origin, webOrigin, ...e.AUTH_TRUSTED_ORIGIN])]

  const passkey = relyingParty(e.PASSKEY_RP_ID, e.PASSKEY_ORIGINS, webOrigin, trustedOrigins)

  if (e.PHONE_SIGN_IN && e.PHONE_SENDER === 'log' && production) {
    throw new ConfigError(
      'Invalid PHONE_SENDER: the log sender writes the codes to the log and is refused when NODE_ENV=production',
    )
  }
  if (e.PAYMENT_GATEWAY === 'sandbox' && production) {
    throw new ConfigError('Invalid PAYMENT_GATEWAY: the sandbox gateway is refused when NODE_ENV=production')
  }
  const gateway = e.PAYMENT_GATEWAY || (production ? undefined : 'sandbox')

  return {
    env: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    logLevel: e.LOG_LEVEL,
    trustProxy: e.TRUST_PROXY,
    database: { url: e.DATABASE_URL, pgliteDir: e.PGLITE_DIR, poolSize: e.DATABASE_POOL_SIZE },
    auth: {
      secrets,
      baseUrl,
      cookieDomain: e.AUTH_COOKIE_DOMAIN,
      secureCookies: production || baseUrl.startsWith('https:'),
      trustedOrigins,
      webOrigin,
      sessionTtlDays: e.SESSION_TTL_DAYS,
      sessionCacheSize: e.SESSION_CACHE_SIZE,
      requireEmailVerification: e.REQUIRE_EMAIL_VERIFICATION,
      bootstrapOwnerEmail: e.BOOTSTRAP_OWNER_EMAIL?.toLowerCase(),
      requireAdminTwoFactor: e.REQUIRE_ADMIN_TWO_FACTOR,
      impersonationAllowsWrites: e.IMPERSONATION_ALLOWS_WRITES,
      passkey,
      guestTtlDays: e.GUEST_TTL_DAYS,
      phone: { signIn: e.PHONE_SIGN_IN, sender: e.PHONE_SENDER },
    },
    purge: { intervalSeconds: e.PURGE_INTERVAL_SECONDS },
    // better-auth's jwt plugin defaults both to the base URL.
    jwt: {
      issuer: e.JWT_ISSUER ?? baseUrl,
      audience: e.JWT_AUDIENCE ?? baseUrl,
      ttlSeconds: e.JWT_TTL_SECONDS,
      keyRotationDays: e.JWT_KEY_ROTATION_DAYS,
      includeEmail: e.JWT_INCLUDE_EMAIL,
    },
    idp: { issuer: e.IDP_ISSUER, clientId: e.IDP_CLIENT_ID, clientSecret: e.IDP_CLIENT_SECRET },
    mail: { smtpUrl: e.SMTP_URL, from: e.MAIL_FROM },
    redisUrl: e.REDIS_URL,
    redisKeyPrefix: e.REDIS_KEY_PREFIX,
    rateLimit: {
      globalPerMinute: e.RATE_LIMIT_GLOBAL_PER_MINUTE,
      signInIpPerMinute: e.RATE_LIMIT_SIGN_IN_IP_PER_MINUTE,
      signInEmailPerMinute: e.RATE_LIMIT_SIGN_IN_EMAIL_PER_MINUTE,
      signUpIpPerMinute: e.RATE_LIMIT_SIGN_UP_IP_PER_MINUTE,
      guestIpPerMinute: e.RATE_LIMIT_GUEST_IP_PER_MINUTE,
      mailPerHour: e.RATE_LIMIT_MAIL_PER_HOUR,
      mailPerAddressPerHour: e.RATE_LIMIT_MAIL_PER_ADDRESS_PER_HOUR,
      codesPerClientPerDay: e.RATE_LIMIT_CODES_PER_CLIENT_PER_DAY,
      codesPerAddressPerDay: e.RATE_LIMIT_CODES_PER_ADDRESS_PER_DAY,
      passwordChecksPerMinute: e.RATE_LIMIT_PASSWORD_CHECKS_PER_MINUTE,
      hashesPerAccountPerMinute: e.RATE_LIMIT_HASHES_PER_ACCOUNT_PER_MINUTE,
      hashesPerIpPerMinute: e.RATE_LIMIT_HASHES_PER_IP_PER_MINUTE,
    },
    hashing: { maxConcurrency: e.HASH_MAX_CONCURRENCY, maxQueue: e.HASH_MAX_QUEUE },
    bodyLimit: e.BODY_LIMIT_BYTES,
    rpc: { requireCsrfHeader: e.RPC_REQUIRE_CSRF_HEADER },
    payments: {
      gateway,
      stripe: { secretKey: e.STRIPE_SECRET_KEY, webhookSecret: e.STRIPE_WEBHOOK_SECRET, apiBase: e.STRIPE_API_BASE },
      midtrans: { serverKey: e.MIDTRANS_SERVER_KEY, production: e.MIDTRANS_PRODUCTION, apiBase: e.MIDTRANS_API_BASE },
    },
    metricsToken: e.METRICS_TOKEN,
    // The document lists every route and its rules: a map for whoever probes a production service.
    apiDocs: e.API_DOCS ?? !production,
  }
}

/** The origin's host lies within the relying party id: a browser runs a ceremony of that id only there. */
const withinRpId = (origin: string, rpId: string) => {
  const host = new URL(origin).hostname
  return host === rpId || host.endsWith(`.${rpId}`)
}

/**
 * The passkeys' relying party: by default the web front end's host name, and the trusted origins on
 * that host or under it (a page elsewhere cannot run a ceremony for it). PASSKEY_RP_ID may name a
 * parent domain (example.com for app.example.com, so passkeys also work on its siblings), and
 * PASSKEY_ORIGINS the exact page origins; each origin must lie within the id, or no browser would
 * ever produce a response the service accepts.
 */
function relyingParty(rpIdGiven: string | undefined, originsGiven: string[], webOrigin: string, trusted: string[]) {
  const rpId = (rpIdGiven ?? new URL(webOrigin).hostname).toLowerCase()
  const origins = originsGiven.length ? [...new Set(originsGiven)] : trusted.filter((o) => withinRpId(o, rpId))
  if (origins.length === 0)
    throw new ConfigError(`Invalid PASSKEY_RP_ID: no trusted origin lies within "${rpId}"; set PASSKEY_ORIGINS or WEB_ORIGIN`)
  const outside = origins.find((o) => !withinRpId(o, rpId))
  if (outside) throw new ConfigError(`Invalid PASSKEY_ORIGINS: "${outside}" is not on "${rpId}" or a subdomain of it`)
  // A page on an untrusted origin could not call the passkey routes at all (INVALID_ORIGIN).
  const untrusted = origins.find((o) => !trusted.includes(o))
  if (untrusted)
    throw new ConfigError(`Invalid PASSKEY_ORIGINS: "${untrusted}" is not a trusted origin (WEB_ORIGIN, AUTH_TRUSTED_ORIGIN)`)
  return { rpId, origins }
}
