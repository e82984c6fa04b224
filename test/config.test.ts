import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { keptDevSecret } from '../src/auth/session/dev-secret.js'
import { ConfigError, ENV_VARIABLES, loadConfig, readEnvironment } from '../src/config.js'
import { entryPoint, ROOT } from './helpers/paths.js'

const SECRET_32 = 'x'.repeat(32)

function load(env: Record<string, string>) {
  const warnings: string[] = []
  const config = loadConfig(env, (message) => warnings.push(message))
  return { config, warnings }
}

function configError(t: Test, env: Record<string, string>, variable: string) {
  try {
    loadConfig(env)
  } catch (err) {
    t.type(err, ConfigError)
    const message = (err as Error).message
    t.match(message, new RegExp(`\\b${variable}\\b`), `the message names ${variable}`)
    t.notMatch(message, /\n/, 'the message is one line')
    return message
  }
  t.fail(`expected a ConfigError naming ${variable}`)
  return ''
}

t.test('defaults: port 8787 on 127.0.0.1, PGlite in ./data, 64 KiB bodies', async (t) => {
  const { config } = load({})
  t.equal(config.port, 8787)
  t.equal(config.host, '127.0.0.1')
  t.equal(config.database.url, undefined)
  t.equal(config.database.pgliteDir, './data')
  t.equal(config.bodyLimit, 64 * 1024)
  t.equal(config.env, 'development')
})

t.test('a bad PORT stops the start with one line naming PORT', async (t) => {
  configError(t, { PORT: 'eighty' }, 'PORT')
  configError(t, { PORT: '70000' }, 'PORT')
  configError(t, { PORT: '80.5' }, 'PORT')
})

t.test('an empty variable counts as unset', async (t) => {
  const { config } = load({ PORT: '', HOST: ' ', PGLITE_DIR: '', AUTH_TRUSTED_ORIGIN: '' })
  t.equal(config.port, 8787, 'PORT= does not become port 0')
  t.equal(config.host, '127.0.0.1')
  t.equal(config.database.pgliteDir, './data')
})

t.test('other bad values name their variable', async (t) => {
  const badValues: Record<string, string[]> = {
    LOG_LEVEL: ['loud'],
    NODE_ENV: ['staging'],
    REDIS_URL: ['http://localhost:6379'],
    SESSION_TTL_DAYS: ['0'],
    TRUST_PROXY: ['yes', '10.0.0.0/33', '0.0.0.0/0', '::/0', '10.0.0.1/8/8', '10.0.0.1,'],
    BOOTSTRAP_OWNER_EMAIL: ['not-an-email'],
    WEB_ORIGIN: ['javascript:alert(1)'],
  }
  for (const [variable, values] of Object.entries(badValues)) {
    for (const value of values) configError(t, { [variable]: value }, variable)
  }
})

t.test('TRUST_PROXY lists the proxies by address: never every hop, never a count of hops', async (t) => {
  // true believed every X-Forwarded-For entry, the client's own included; Fastify 5 trusts nothing for a count.
  t.match(configError(t, { TRUST_PROXY: 'true' }, 'TRUST_PROXY'), /choose its own IP/)
  configError(t, { TRUST_PROXY: '1' }, 'TRUST_PROXY')
  t.equal(load({}).config.trustProxy, false)
  t.equal(load({ TRUST_PROXY: 'false' }).config.trustProxy, false)
  t.same(load({ TRUST_PROXY: ' 10.0.0.2, 172.16.0.0/12,fd00::/8, loopback ' }).config.trustProxy, [
    '10.0.0.2',
    '172.16.0.0/12',
    'fd00::/8',
    'loopback',
  ])
})

t.test('AUTH_SECRET is required in production', async (t) => {
  const message = configError(t, { NODE_ENV: 'production', AUTH_URL: 'https://api.example.com' }, 'AUTH_SECRET')
  t.match(message, /required in production/)
})

t.test('AUTH_SECRET in production needs at least 32 characters per key', async (t) => {
  configError(t, { NODE_ENV: 'production', AUTH_SECRET: 'x'.repeat(31) }, 'AUTH_SECRET')
  configError(t, { NODE_ENV: 'production', AUTH_SECRET: `${SECRET_32},short` }, 'AUTH_SECRET')
  const { config, warnings } = load({ NODE_ENV: 'production', AUTH_SECRET: SECRET_32, AUTH_URL: 'https://api.example.com' })
  t.same(config.auth.secrets, [SECRET_32])
  t.same(warnings, [])
  t.equal(config.auth.secureCookies, true, 'production cookies are Secure')
})

t.test('a short secret never appears in the error message', async (t) => {
  const message = configError(t, { NODE_ENV: 'production', AUTH_SECRET: 'hunter2-secret' }, 'AUTH_SECRET')
  t.notMatch(message, /hunter2/)
})

t.test('several AUTH_SECRET keys: the first signs, all are kept for verification', async (t) => {
  const second = 'y'.repeat(40)
  const { config } = load({ AUTH_SECRET: `${SECRET_32}, ${second}` })
  t.same(config.auth.secrets, [SECRET_32, second])
})

t.test('outside production a missing AUTH_SECRET is generated, with a warning', async (t) => {
  const a = load({ NODE_ENV: 'development' })
  const b = load({ NODE_ENV: 'test' })
  t.equal(a.config.auth.secrets.length, 1)
  t.ok(a.config.auth.secrets[0]!.length >= 32, 'the generated key is long enough')
  t.not(a.config.auth.secrets[0], b.config.auth.secrets[0], 'a fresh random key every start')
  t.ok(a.warnings.some((w) => /AUTH_SECRET/.test(w) && /generated/.test(w)))
})

t.test('outside production, the server keeps its generated key in the data folder and reuses it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'insight-secret-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const keep = (env: Record<string, string>) => {
    const warnings: string[] = []
    const config = loadConfig({ PGLITE_DIR: dir, ...env }, (m) => warnings.push(m), { keptDevSecret })
    return { config, warnings }
  }
  const first = keep({ NODE_ENV: 'development' })
  const again = keep({ NODE_ENV: 'test' })
  t.equal(first.config.auth.secrets.length, 1)
  t.ok(first.config.auth.secrets[0]!.length >= 32)
  t.same(again.config.auth.secrets, first.config.auth.secrets, 'the same key on the next start')
  const file = join(dir, 'auth-secret')
  t.equal(readFileSync(file, 'utf8').trim(), first.config.auth.secrets[0])
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable by its owner only')
  t.ok(
    first.warnings.some((w) => /AUTH_SECRET/.test(w) && w.includes(file)),
    'the warning names the file',
  )
  t.same(keep({ NODE_ENV: 'development', AUTH_SECRET: SECRET_32 }).config.auth.secrets, [SECRET_32], 'AUTH_SECRET wins')
  writeFileSync(file, 'short\n')
  t.not(keep({}).config.auth.secrets[0], 'short', 'a key too short to sign is replaced')
  // Production never reads it: AUTH_SECRET stays required.
  t.throws(() => loadConfig({ NODE_ENV: 'production', PGLITE_DIR: dir }, () => {}, { keptDevSecret }), /AUTH_SECRET/)
})

t.test('an in-memory database keeps no key on disk: a random key each start, no ./memory: folder', async (t) => {
  const folder = join(process.cwd(), 'memory:')
  t.notOk(existsSync(folder), 'no folder before')
  const warnings: string[] = []
  const a = loadConfig({ PGLITE_DIR: 'memory://' }, (m) => warnings.push(m), { keptDevSecret })
  const b = loadConfig({ PGLITE_DIR: 'memory://' }, () => {}, { keptDevSecret })
  t.notOk(existsSync(folder), 'nothing written beside the sources')
  t.not(a.auth.secrets[0], b.auth.secrets[0], 'a fresh key every start, as the data is fresh')
  t.ok(warnings.some((w) => /AUTH_SECRET/.test(w) && /generated/.test(w)))
})

t.test('a .env file adds variables; the environment wins over it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'insight-env-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, '.env')
  const name = `INSIGHT_TEST_${process.pid}`
  writeFileSync(file, `${name}_A=from-file\n${name}_B=from-file\n`)
  process.env[`${name}_B`] = 'from-environment'
  t.teardown(() => {
    delete process.env[`${name}_A`]
    delete process.env[`${name}_B`]
  })
  const env = readEnvironment(file)
  t.equal(env[`${name}_A`], 'from-file')
  t.equal(env[`${name}_B`], 'from-environment')
  t.equal(readEnvironment(join(dir, 'absent.env')), process.env, 'no file, no change')
})

t.test('a missing AUTH_URL falls back to http://localhost:<PORT> with a warning', async (t) => {
  const { config, warnings } = load({ AUTH_SECRET: SECRET_32 })
  t.equal(config.auth.baseUrl, 'http://localhost:8787')
  t.ok(warnings.some((w) => /AUTH_URL/.test(w) && /localhost:8787/.test(w)))
  t.equal(config.auth.secureCookies, false)
  const onPort = load({ AUTH_SECRET: SECRET_32, PORT: '9123' })
  t.equal(onPort.config.auth.baseUrl, 'http://localhost:9123', 'the port actually served')
  t.ok(onPort.config.auth.trustedOrigins.includes('http://localhost:9123'))

  const set = load({ AUTH_SECRET: SECRET_32, AUTH_URL: 'https://api.example.com/' })
  t.equal(set.config.auth.baseUrl, 'https://api.example.com', 'trailing slash dropped')
  t.same(set.warnings, [])
  t.equal(set.config.auth.secureCookies, true, 'an https AUTH_URL makes cookies Secure')
  configError(t, { AUTH_URL: 'ftp://api.example.com' }, 'AUTH_URL')
  configError(t, { AUTH_URL: 'not a url' }, 'AUTH_URL')
})

t.test('trusted origins: AUTH_URL origin, WEB_ORIGIN and each AUTH_TRUSTED_ORIGIN entry', async (t) => {
  const { config } = load({
    AUTH_URL: 'https://api.example.com/base',
    WEB_ORIGIN: 'https://app.example.com/',
    AUTH_TRUSTED_ORIGIN: ' https://admin.example.com , https://partner.example.org:8443/some/path,,https://app.example.com',
  })
  t.same(
    config.auth.trustedOrigins,
    ['https://api.example.com', 'https://app.example.com', 'https://admin.example.com', 'https://partner.example.org:8443'],
    'exact origins, paths dropped, duplicates removed',
  )
  t.equal(config.auth.webOrigin, 'https://app.example.com')
})

t.test("passkeys' relying party: the web origin's host and the trusted origins on it, or as configured", async (t) => {
  const sites = {
    AUTH_URL: 'https://api.example.com',
    WEB_ORIGIN: 'https://app.example.com',
    AUTH_TRUSTED_ORIGIN: 'https://admin.example.com,https://partner.example.org',
  }
  t.same(load(sites).config.auth.passkey, { rpId: 'app.example.com', origins: ['https://app.example.com'] })
  t.same(load({ ...sites, PASSKEY_RP_ID: 'Example.com' }).config.auth.passkey, {
    rpId: 'example.com',
    origins: ['https://api.example.com', 'https://app.example.com', 'https://admin.example.com'],
  })
  t.same(load({ ...sites, PASSKEY_RP_ID: 'example.com', PASSKEY_ORIGINS: 'https://admin.example.com' }).config.auth.passkey, {
    rpId: 'example.com',
    origins: ['https://admin.example.com'],
  })
  t.match(configError(t, { ...sites, PASSKEY_RP_ID: 'evil.example' }, 'PASSKEY_RP_ID'), /no trusted origin/)
  configError(t, { ...sites, PASSKEY_RP_ID: 'https://example.com' }, 'PASSKEY_RP_ID')
  configError(t, { ...sites, PASSKEY_ORIGINS: 'https://partner.example.org' }, 'PASSKEY_ORIGINS')
  t.match(
    configError(t, { ...sites, PASSKEY_RP_ID: 'example.com', PASSKEY_ORIGINS: 'https://other.example.com' }, 'PASSKEY_ORIGINS'),
    /not a trusted origin/,
  )
})

t.test('a malformed AUTH_TRUSTED_ORIGIN entry stops the start', async (t) => {
  const message = configError(t, { AUTH_TRUSTED_ORIGIN: 'https://ok.example.com,not a url' }, 'AUTH_TRUSTED_ORIGIN')
  t.match(message, /not a url/)
  configError(t, { AUTH_TRUSTED_ORIGIN: 'ftp://files.example.com' }, 'AUTH_TRUSTED_ORIGIN')
})

t.test('the sandbox payment gateway is refused in production, the default elsewhere', async (t) => {
  configError(t, { NODE_ENV: 'production', AUTH_SECRET: SECRET_32, PAYMENT_GATEWAY: 'sandbox' }, 'PAYMENT_GATEWAY')
  t.equal(load({}).config.payments.gateway, 'sandbox')
  t.equal(load({ NODE_ENV: 'production', AUTH_SECRET: SECRET_32 }).config.payments.gateway, undefined)
})

t.test('ENV_VARIABLES lists what the schema reads', async (t) => {
  const read = `
    AUTH_SECRET AUTH_URL AUTH_COOKIE_DOMAIN AUTH_TRUSTED_ORIGIN IDP_CLIENT_ID IDP_CLIENT_SECRET
    DATABASE_URL PGLITE_DIR WEB_ORIGIN
    PORT HOST LOG_LEVEL REDIS_URL NODE_ENV
  `
  for (const name of read.trim().split(/\s+/)) {
    t.ok(ENV_VARIABLES.includes(name), `${name} is read`)
  }
})

function runServer(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, entryPoint('src/server.ts'), {
      cwd: ROOT,
      env: { PATH: process.env.PATH, PGLITE_DIR: 'memory://', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.once('exit', (code) => resolve({ code, stdout, stderr }))
  })
}

t.test('the server exits non-zero with one clear line on a bad PORT', async (t) => {
  const { code, stdout, stderr } = await runServer({ PORT: 'not-a-port' })
  t.equal(code, 1)
  t.equal(stdout, '', 'nothing started')
  const lines = stderr.trim().split('\n')
  t.equal(lines.length, 1, 'exactly one line')
  t.match(lines[0], /^Configuration error: Invalid PORT/)
})

t.test('the server refuses to start in production without AUTH_SECRET', async (t) => {
  const { code, stderr } = await runServer({ NODE_ENV: 'production' })
  t.equal(code, 1)
  t.equal(stderr.trim().split('\n').length, 1)
  t.match(stderr, /Invalid AUTH_SECRET: required in production/)
})

t.test('the server exits non-zero with one line when the database is unreachable at start-up', async (t) => {
  const { code, stderr } = await runServer({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nothing', PORT: '0' })
  t.equal(code, 1)
  const lines = stderr.trim().split('\n')
  t.equal(lines.length, 1, stderr)
  t.match(lines[0], /^Start-up failed: .*ECONNREFUSED/)
})
