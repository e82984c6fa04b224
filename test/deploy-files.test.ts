// What can be checked about the deployment files without a container engine.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { parse } from 'yaml'
import { ENV_VARIABLES } from '../src/config.js'
import { ROOT } from './helpers/paths.js'

const read = (file: string) => readFileSync(`${ROOT}${file}`, 'utf8')

const envExample = read('.env.example')
const readme = read('README.md')
const configurationDoc = read('docs/configuration.md')
const operationsDoc = read('docs/operations.md')
const dockerfile = read('Dockerfile')
const compose = parse(read('docker-compose.yml')) as {
  services: Record<
    string,
    {
      image?: string
      build?: unknown
      ports?: string[]
      environment?: Record<string, string>
      depends_on?: Record<string, { condition: string }>
      volumes?: string[]
      healthcheck?: { test: unknown }
    }
  >
  volumes?: Record<string, unknown>
}

/** The text under the `## heading` of a Markdown document, up to the next `## ` heading ('' if absent). */
function section(doc: string, heading: string): string {
  const lines = doc.split('\n')
  const start = lines.indexOf(`## ${heading}`)
  if (start === -1) return ''
  const next = lines.findIndex((line, i) => i > start && line.startsWith('## '))
  return lines.slice(start + 1, next === -1 ? undefined : next).join('\n')
}

t.test('.env.example lists exactly the variables the config reads, each with a comment', async (t) => {
  const lines = envExample.split('\n')
  const listed: string[] = []
  lines.forEach((line, i) => {
    const match = /^([A-Z][A-Z0-9_]*)=/.exec(line)
    if (!match) return
    listed.push(match[1]!)
    t.match(lines[i - 1], /^#/, `${match[1]} has a comment above it`)
  })
  t.same([...listed].sort(), [...ENV_VARIABLES].sort())
  t.equal(new Set(listed).size, listed.length, 'no variable twice')
})

t.test('the header of .env.example says what reads the file (config.test.ts starts the server on one)', async (t) => {
  const header = envExample.slice(0, envExample.indexOf('\n\n'))
  t.match(header, /`npm start`, `npm run dev` and the command line read `.env`/)
  t.notMatch(header, /environment only|ignore/i)
})

t.test("the README's quick start names the development inbox and every budget an end-to-end run lifts", async (t) => {
  const quickStart = section(readme, 'Quick start')
  t.match(quickStart, 'http://localhost:8787/api/dev/mail')
  const budgets = ENV_VARIABLES.filter((name) => name.startsWith('RATE_LIMIT_'))
  t.ok(budgets.length >= 9)
  for (const name of budgets) t.match(quickStart, `\`${name}\``, name)
})

t.test('.env.example holds no secret values', async (t) => {
  const secrets = 'AUTH_SECRET IDP_CLIENT_SECRET STRIPE_SECRET_KEY STRIPE_WEBHOOK_SECRET MIDTRANS_SERVER_KEY METRICS_TOKEN'
  for (const name of secrets.split(' ')) {
    t.match(envExample, new RegExp(`^${name}=$`, 'm'), `${name} is empty`)
  }
})

t.test('the configuration table of docs/configuration.md names every variable, each once', async (t) => {
  const table = section(configurationDoc, 'Every variable')
  for (const name of ENV_VARIABLES) t.match(table, `| \`${name}\` |`, name)
  const rows = table
    .split('\n')
    .map((line) => /^\| `([A-Z][A-Z0-9_]*)` \|/.exec(line)?.[1])
    .filter((name) => name !== undefined)
  t.same([...rows].sort(), [...ENV_VARIABLES].sort(), 'one row per variable the config reads, and no other')
})

t.test('the compose file parses and has the services and ports docs/operations.md names', async (t) => {
  const { services } = compose
  t.same(Object.keys(services).sort(), ['api', 'postgres', 'redis'])
  t.same(services.api!.ports, ['8787:8787'])
  t.same(services.api!.depends_on?.postgres, { condition: 'service_healthy' }, 'the API waits for a healthy database')
  t.match(services.postgres!.image, /^postgres:16/)
  t.match(services.redis!.image, /^redis:7/)
  t.ok(services.postgres!.healthcheck, 'postgres has a healthcheck')
  const volume = services.postgres!.volumes?.[0]?.split(':')[0]
  t.ok(volume && compose.volumes && volume in compose.volumes, 'postgres data lives in a named volume')
  const env = services.api!.environment!
  t.match(env.DATABASE_URL, /@postgres:5432\//)
  t.match(env.REDIS_URL, /^redis:\/\/redis:6379/)
  t.match(env.AUTH_SECRET, /^\$\{AUTH_SECRET:\?/, 'AUTH_SECRET must be supplied, never defaulted')
  for (const name of Object.keys(env)) t.ok(ENV_VARIABLES.includes(name), `${name} is a variable the config reads`)

  const ops = section(operationsDoc, 'Docker')
  t.match(ops, 'docker compose up')
  for (const name of ['api', 'postgres', 'redis']) t.match(ops, `\`${name}\``, `docs/operations.md names the ${name} service`)
  t.match(ops, 'http://localhost:8787')
  t.match(ops, 'PostgreSQL 16')
})

t.test('the Dockerfile is multi-stage, non-root, with a healthcheck and no secrets', async (t) => {
  const from = dockerfile.match(/^FROM /gm) ?? []
  t.ok(from.length >= 2, 'several stages')
  t.match(dockerfile, /^FROM node:(2[2-9]|[3-9]\d)[\w.-]*/m, 'a current Node LTS base')
  t.match(dockerfile, /npm ci/)
  t.match(dockerfile, /npm prune --omit=dev/, 'production dependencies only')
  t.match(dockerfile, /^USER node$/m, 'runs as the unprivileged node user')
  t.match(dockerfile, /^HEALTHCHECK .*\n?.*\/api\/health/m)
  t.match(dockerfile, /^EXPOSE 8787$/m)
  t.match(dockerfile, /HOST=0\.0\.0\.0/)
  t.match(dockerfile, /^CMD \["node", "dist\/src\/server\.js"\]$/m, 'node is PID 1 and receives SIGTERM')
  t.notMatch(dockerfile, /AUTH_SECRET|_KEY=|SECRET=|PASSWORD=/, 'no secrets baked in')
  const lastFrom = dockerfile.lastIndexOf('\nFROM ')
  t.ok(dockerfile.indexOf('USER node') > lastFrom, 'the final stage drops root')
})

t.test("the Dockerfile gives npm ci every workspace's manifest", async (t) => {
  // npm ci installs from the lockfile, which names the workspaces (packages/contract): without
  // their package.json it cannot lay out node_modules as the lockfile says.
  const { workspaces } = JSON.parse(read('package.json')) as { workspaces: string[] }
  t.ok(workspaces.length > 0, workspaces.join(', '))
  const ci = dockerfile.indexOf('RUN npm ci')
  for (const workspace of workspaces) {
    const copy = dockerfile.indexOf(`COPY ${workspace}/package.json ./${workspace}/`)
    t.ok(copy !== -1 && copy < ci, `${workspace}/package.json is copied before npm ci`)
  }
})

t.test('.dockerignore keeps local databases, secrets and builds out of the image context', async (t) => {
  const ignored = read('.dockerignore')
    .split('\n')
    .map((l) => l.trim())
  for (const entry of ['node_modules', 'dist', 'data', '.env', '.git']) t.ok(ignored.includes(entry), entry)
})
