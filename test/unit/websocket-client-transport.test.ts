import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { IncomingHttpHeaders, Server as HttpServer } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { WebSocketServer } from 'ws'
import type WebSocket from 'ws'
import { Client } from '@modelcontextprotocol/client'
import type { JSONRPCMessage } from '@modelcontextprotocol/client'
import { WebSocketClientTransport, WebSocketUpgradeError } from '../../src/upstream/websocket-client-transport.ts'
import { createControllableServer } from '../fixtures/controllable-server.ts'
import { startWebSocketMcpServer } from '../fixtures/websocket-server-transport.ts'

interface RawServer {
  url: URL
  /** Resolves with each accepted socket and the headers of its upgrade request. */
  nextConnection(): Promise<{ ws: WebSocket, headers: IncomingHttpHeaders }>
}

/** A bare ws server, so tests control every frame the client sees. */
async function startRawServer (t: TestContext, options: { acceptProtocol?: boolean } = {}): Promise<RawServer> {
  const waiting: Array<(c: { ws: WebSocket, headers: IncomingHttpHeaders }) => void> = []
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    handleProtocols: (protocols) => options.acceptProtocol === false ? false : protocols.has('mcp') ? 'mcp' : false
  })
  wss.on('connection', (ws, req) => waiting.shift()?.({ ws, headers: req.headers }))
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()))
  t.after(async () => {
    for (const client of wss.clients) client.terminate()
    await new Promise<void>((resolve) => wss.close(() => resolve()))
  })
  const port = (wss.address() as AddressInfo).port
  return {
    url: new URL(`ws://127.0.0.1:${port}/mcp`),
    nextConnection: () => new Promise((resolve) => waiting.push(resolve))
  }
}

async function startHttpServer (t: TestContext, onUpgrade: (socket: Socket) => void): Promise<URL> {
  const http: HttpServer = createServer((_req, res) => res.writeHead(404).end())
  // Upgraded sockets leave the HTTP server's bookkeeping, so closeAllConnections() misses them.
  const upgraded = new Set<Socket>()
  http.on('upgrade', (_req, socket: Socket) => {
    upgraded.add(socket)
    onUpgrade(socket)
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()))
  t.after(async () => {
    for (const socket of upgraded) socket.destroy()
    http.closeAllConnections()
    await new Promise<void>((resolve) => http.close(() => resolve()))
  })
  return new URL(`ws://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`)
}

async function freePort (): Promise<number> {
  const http = createServer()
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()))
  const port = (http.address() as AddressInfo).port
  await new Promise<void>((resolve) => http.close(() => resolve()))
  return port
}

function nextMessage (transport: WebSocketClientTransport): Promise<JSONRPCMessage> {
  return new Promise((resolve) => { transport.onmessage = resolve })
}

test('SDK client talks to an SDK server through the transport', async (t) => {
  const server = await startWebSocketMcpServer({ createServer: () => createControllableServer({ name: 'ws-unit' }) })
  t.after(() => server.close())
  const client = new Client({ name: 'unit', version: '1.0.0' })
  t.after(() => client.close())

  await client.connect(new WebSocketClientTransport(new URL(server.url)))
  const result = await client.callTool({ name: 'echo', arguments: { text: 'over ws' } })
  assert.deepEqual(result.structuredContent, { text: 'over ws' })
})

test('sends custom headers and the mcp subprotocol on the upgrade request', async (t) => {
  const raw = await startRawServer(t)
  const connection = raw.nextConnection()
  const transport = new WebSocketClientTransport(raw.url, { headers: { authorization: 'Bearer upstream-token', 'x-extra': '1' } })
  t.after(() => transport.close())

  await transport.start()
  const { headers } = await connection
  assert.equal(headers.authorization, 'Bearer upstream-token')
  assert.equal(headers['x-extra'], '1')
  assert.equal(headers['sec-websocket-protocol'], 'mcp')
})

test('start() rejects cleanly when the connection is refused', async () => {
  const port = await freePort()
  const transport = new WebSocketClientTransport(new URL(`ws://127.0.0.1:${port}/mcp?token=secret`))
  let closed = 0
  transport.onclose = () => { closed++ }

  await assert.rejects(transport.start(), (error: Error) => {
    assert.match(error.message, /ECONNREFUSED/)
    assert.match(error.message, new RegExp(`ws://127\\.0\\.0\\.1:${port}/mcp`))
    assert.doesNotMatch(error.message, /secret/, 'query strings may hold credentials')
    return true
  })
  await transport.close()
  await assert.rejects(transport.send({ jsonrpc: '2.0', method: 'ping', id: 1 }), /not open/)
  assert.equal(closed, 1, 'close() after a failed start still reports onclose exactly once')
})

test('start() rejects with the HTTP status when the upgrade is refused', async (t) => {
  const url = await startHttpServer(t, (socket) => {
    socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
  })
  const transport = new WebSocketClientTransport(url)

  await assert.rejects(transport.start(), (error: unknown) => {
    assert.ok(error instanceof WebSocketUpgradeError)
    assert.equal(error.status, 401)
    assert.match(error.message, /401/)
    return true
  })
})

test('an upgrade that is never answered can be abandoned with close() or a handshake timeout', async (t) => {
  let upgradeAsked!: () => void
  const asked = new Promise<void>((resolve) => { upgradeAsked = resolve })
  const url = await startHttpServer(t, () => { upgradeAsked() })

  const abandoned = new WebSocketClientTransport(url)
  const starting = assert.rejects(abandoned.start(), /closed before the connection was established/)
  await asked // the upgrade request is on the wire, unanswered
  await abandoned.close()
  await starting

  const impatient = new WebSocketClientTransport(url, { handshakeTimeoutMs: 50 })
  await assert.rejects(impatient.start(), /timed out/)
})

test('start() rejects when the server does not select the mcp subprotocol', async (t) => {
  const raw = await startRawServer(t, { acceptProtocol: false })
  const transport = new WebSocketClientTransport(raw.url)
  await assert.rejects(transport.start(), /subprotocol/)
})

test('a malformed frame reports onerror, is dropped, and the connection keeps working', async (t) => {
  const raw = await startRawServer(t)
  const connection = raw.nextConnection()
  const transport = new WebSocketClientTransport(raw.url)
  t.after(() => transport.close())
  const errors: Error[] = []
  transport.onerror = (error) => errors.push(error)
  await transport.start()
  const { ws } = await connection

  const received = nextMessage(transport)
  ws.send('{not json')
  ws.send(JSON.stringify({ hello: 'not json-rpc' }))
  ws.send(Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'binary/frame' })), { binary: true })
  ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/ok' }))
  assert.deepEqual(await received, { jsonrpc: '2.0', method: 'notifications/ok' })
  assert.equal(errors.length, 3)
  assert.match(errors[0]?.message ?? '', /not a JSON-RPC 2\.0 message/)
  assert.match(errors[2]?.message ?? '', /binary/)

  const echoed = new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))))
  await transport.send({ jsonrpc: '2.0', id: 7, method: 'ping' })
  assert.deepEqual(JSON.parse(await echoed), { jsonrpc: '2.0', id: 7, method: 'ping' })
})

test('close() is idempotent and reports onclose once', async (t) => {
  const raw = await startRawServer(t)
  const transport = new WebSocketClientTransport(raw.url)
  let closed = 0
  transport.onclose = () => { closed++ }
  await transport.start()
  await assert.rejects(transport.start(), /already started/)

  await Promise.all([transport.close(), transport.close()])
  await transport.close()
  assert.equal(closed, 1)
  await assert.rejects(transport.send({ jsonrpc: '2.0', method: 'ping', id: 1 }), /not open/)
})

test('an unexpected server-side close reports onclose once', async (t) => {
  const raw = await startRawServer(t)
  const connection = raw.nextConnection()
  const transport = new WebSocketClientTransport(raw.url)
  let closed = 0
  const onclose = new Promise<void>((resolve) => {
    transport.onclose = () => {
      closed++
      resolve()
    }
  })
  await transport.start()
  const { ws } = await connection

  ws.terminate()
  await onclose
  await transport.close()
  assert.equal(closed, 1)
})

test('progress sent in the same tick as the result still reaches the caller', async (t) => {
  const raw = await startRawServer(t)
  const connection = raw.nextConnection()
  const client = new Client({ name: 'unit', version: '1.0.0' })
  t.after(() => client.close())
  const connecting = client.connect(new WebSocketClientTransport(raw.url))
  const { ws } = await connection
  const steps = 50
  ws.on('message', (data) => {
    const message = JSON.parse(String(data)) as { id?: number, method: string, params?: { protocolVersion?: string, _meta?: { progressToken?: number } } }
    if (message.method === 'initialize') {
      ws.send(JSON.stringify({
        jsonrpc: '2.0',
        id: message.id,
        result: { protocolVersion: message.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'raw', version: '1' } }
      }))
    } else if (message.method === 'tools/call') {
      const progressToken = message.params?._meta?.progressToken
      for (let i = 1; i <= steps; i++) {
        ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken, progress: i, total: steps } }))
      }
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 'done' }] } }))
    }
  })
  await connecting

  const seen: number[] = []
  await client.callTool({ name: 'burst', arguments: {} }, { onprogress: (p) => seen.push(p.progress) })
  assert.equal(seen.length, steps)
  assert.equal(seen.at(-1), steps)
})
