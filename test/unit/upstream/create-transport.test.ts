import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import pino from 'pino'
import { parseConfig } from '../../../src/config/load-config.ts'
import type { UpstreamConfig } from '../../../src/config/schema.ts'
import { createTransport } from '../../../src/upstream/create-transport.ts'
import { isAuthFailure } from '../../../src/upstream/circuit-breaker.ts'

const log = pino({ level: 'silent' })

function upstreamOf (upstream: Record<string, unknown>): UpstreamConfig {
  const config = parseConfig(JSON.stringify({ upstreams: [{ name: 'up', ...upstream }] }), {})
  const parsed = config.upstreams[0]
  assert.ok(parsed !== undefined)
  return parsed
}

/** Refuses every request (and WebSocket upgrade) with 401, recording the headers it was sent. */
async function refusing (t: TestContext): Promise<{ origin: string, seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = []
  const server = createServer((req, res) => {
    seen.push(req.headers)
    req.resume().on('end', () => { res.writeHead(401).end() })
  })
  server.on('upgrade', (req, socket) => {
    seen.push(req.headers)
    socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n')
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.after(async () => {
    server.closeAllConnections()
    await new Promise(resolve => server.close(resolve))
  })
  return { origin: `127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

test('a legacy SSE upstream gets its configured headers from the provider', async (t) => {
  const server = await refusing(t)
  const transport = await createTransport(upstreamOf({ transport: 'sse', url: `http://${server.origin}/sse`, headers: { authorization: 'Bearer sse-own' } }), { killAfterMs: 100, log, baseEnv: {} })
  t.after(() => transport.close())
  await assert.rejects(transport.start())
  assert.equal(server.seen[0]?.authorization, 'Bearer sse-own')
})

test('a legacy SSE upstream\'s POSTs carry its configured headers too', async (t) => {
  const posts: IncomingHttpHeaders[] = []
  const server = createServer((req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('event: endpoint\ndata: /messages\n\n')
      return
    }
    posts.push(req.headers)
    req.resume().on('end', () => { res.writeHead(202).end() })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.after(async () => {
    server.closeAllConnections()
    await new Promise(resolve => server.close(resolve))
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/sse`
  const transport = await createTransport(upstreamOf({ transport: 'sse', url, headers: { authorization: 'Bearer sse-own' } }), { killAfterMs: 100, log, baseEnv: {} })
  t.after(() => transport.close())
  await transport.start()
  await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  assert.equal(posts[0]?.authorization, 'Bearer sse-own')
})

test('a WebSocket upstream gets its configured headers with its upgrade, and a 401 there is an auth failure', async (t) => {
  const server = await refusing(t)
  const transport = await createTransport(upstreamOf({ transport: 'websocket', url: `ws://${server.origin}/ws`, headers: { authorization: 'Bearer ws-own' } }), { killAfterMs: 100, log, baseEnv: {} })
  t.after(() => transport.close())
  await assert.rejects(transport.start(), (err: unknown) => isAuthFailure(err))
  assert.equal(server.seen[0]?.authorization, 'Bearer ws-own')
})

test('a stdio child gets its configured env from the provider', async (t) => {
  const script = 'process.stdout.write(JSON.stringify({ jsonrpc: "2.0", method: "env", params: { key: process.env.API_KEY } }) + "\\n"); process.stdin.resume()'
  const transport = await createTransport(upstreamOf({ transport: 'stdio', command: process.execPath, args: ['-e', script], env: { API_KEY: 'child-own-key' } }), { killAfterMs: 500, log, baseEnv: { PATH: process.env.PATH } })
  t.after(() => transport.close())
  const message = new Promise<unknown>(resolve => { transport.onmessage = resolve })
  await transport.start()
  assert.deepEqual(await message, { jsonrpc: '2.0', method: 'env', params: { key: 'child-own-key' } })
})
