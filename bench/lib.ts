// Shared pieces of the bench, soak and fault drills: a free port, the server's environment, starting
// the built server (dist/) and waiting for it, a fresh PostgreSQL database per run, RSS readings.
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { GENEROUS_RATE_LIMITS } from '../test/helpers/limits.js'
import { freePort } from '../test/helpers/port.js'
import pg from 'pg'

/** PostgreSQL server URL without a database name. */
export const POSTGRES = process.env.BENCH_POSTGRES_URL ?? process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432'
export const REDIS = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
export const ORIGIN = 'http://localhost:3000'

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/**
 * The server's whole environment. Built from scratch, not from process.env, so a developer's
 * DATABASE_URL or REDIS_URL in the shell never leaks into a measurement.
 */
export function serverEnv(port: number, extra: Record<string, string>): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    AUTH_SECRET: 'bench-secret-0123456789-0123456789-0123456789',
    AUTH_URL: `http://127.0.0.1:${port}`,
    WEB_ORIGIN: ORIGIN,
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'warn',
    PAYMENT_GATEWAY: '',
    // Measure the routes, not the per-IP limiter (every client here is one IP): the tests' generous
    // limits, the global one a hundred times higher still.
    ...GENEROUS_RATE_LIMITS,
    RATE_LIMIT_GLOBAL_PER_MINUTE: '100000000',
    ...extra,
  }
}

/** Polls `url` until it answers 2xx; fails early if the process exits. */
export async function waitUntilUp(url: string, child: ChildProcess, attempts = 600): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (child.exitCode !== null) throw new Error(`${url}: process exited with ${child.exitCode}`)
    try {
      if ((await fetch(url)).ok) return
    } catch {
      // not listening yet
    }
    await sleep(100)
  }
  throw new Error(`${url} did not come up`)
}

export interface RunningServer {
  child: ChildProcess
  base: string
  port: number
  exit: Promise<number | null>
}

/** Starts dist/src/server.js on a free port and waits until `readyPath` answers. */
export async function startServer(
  env: Record<string, string>,
  options: { readyPath?: string; port?: number } = {},
): Promise<RunningServer> {
  const port = options.port ?? (await freePort())
  const child = spawn(process.execPath, ['dist/src/server.js'], {
    env: serverEnv(port, env),
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  const exit = new Promise<number | null>((r) => child.once('exit', r))
  const base = `http://127.0.0.1:${port}`
  await waitUntilUp(`${base}${options.readyPath ?? '/api/health'}`, child)
  return { child, base, port, exit }
}

/** Starts a TypeScript helper (a baseline server) through tsx and waits until `readyUrl` answers. */
export async function startTsProcess(file: string, args: string[], readyUrl: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', file, ...args], {
    env: { PATH: process.env.PATH },
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  await waitUntilUp(readyUrl, child)
  return child
}

export async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode
  const exited = new Promise<number | null>((r) => child.once('exit', r))
  child.kill('SIGTERM')
  return exited
}

/** Peak resident set size (VmHWM) of a process, in MiB; Linux only. */
export function peakRssMiB(pid: number): number | null {
  const kb = procStatusKb(pid, 'VmHWM')
  return kb === null ? null : Math.round((kb / 1024) * 10) / 10
}

/** Current resident set size (VmRSS) in KiB, 0 when unreadable. */
export const rssKb = (pid: number): number => procStatusKb(pid, 'VmRSS') ?? 0

function procStatusKb(pid: number, field: 'VmHWM' | 'VmRSS'): number | null {
  try {
    const kb = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
    return kb ? Number(kb) : null
  } catch {
    return null
  }
}

export interface FreshDatabase {
  name: string
  url: string
  drop(): Promise<void>
}

/** A new, empty database on the PostgreSQL server, dropped (with force) by `drop()`. */
export async function createDatabase(prefix: string, postgres = POSTGRES): Promise<FreshDatabase> {
  const name = `${prefix}_${Date.now()}_${process.pid}`
  const admin = new pg.Client({ connectionString: `${postgres}/postgres` })
  await admin.connect()
  await admin.query(`create database ${name}`)
  let dropped = false
  return {
    name,
    url: `${postgres}/${name}`,
    async drop() {
      if (dropped) return
      dropped = true
      await admin.query(`drop database if exists ${name} with (force)`).catch(() => {})
      await admin.end().catch(() => {})
    },
  }
}

/** Runs `fn` with a short-lived client on `url`. */
export async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

/** The session cookie (`name=value`, value as sent) from a response's Set-Cookie headers. */
export function sessionCookie(res: Response): string | undefined {
  return res.headers
    .getSetCookie()
    .map((c) => c.split(';', 1)[0]!)
    .find((c) => /session_token=./.test(c))
}

export async function postJson(base: string, path: string, body: unknown, cookie?: string): Promise<Response> {
  return fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: ORIGIN, ...(cookie ? { cookie } : {}) },
    body: JSON.stringify(body),
  })
}
