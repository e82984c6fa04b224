// The baseline: a bare Fastify hello-world, same framework and logger off, in its own process.
// Usage: tsx bench/hello.ts <port>
import Fastify from 'fastify'

const app = Fastify({ logger: false })
app.get('/', async () => ({ hello: 'world' }))
await app.listen({ port: Number(process.argv[2] ?? 18080), host: '127.0.0.1' })
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)))
