import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { Client, SSEClientTransport } from '@modelcontextprotocol/client'
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js'
import { WebSocket, type ClientOptions } from 'ws'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { metricValue, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

// The SDK's WebSocketClientTransport uses the global WebSocket, which Node 20 does not have.
globalThis.WebSocket ??= WebSocket as unknown as typeof globalThis.WebSocket

const NO_UPSTREAMS = 'upstreams: []\n'
const WAIT_MS = 5_000

type Message = Record<string, unknown> & { id?: unknown, result?: Record<string, unknown>, error?: { code: number, message: string } }

interface ToolResult { content: Array<{ type: string, text?: string }>, isError?: boolean }

function textOf (result: unknown): string {
  return (result as ToolResult).content.map(c => c.text ?? '').join('')
}

/** A gateway in front of one in-process controllable upstream named `up`. */
async function gatewayWithUpstream (t: TestContext, http: Record<string, unknown> = {}): Promise<RunningGateway> {
  const upstream = await startControllableHttpServer({ name: 'up' })
  t.after(() => upstream.close())
  const gw = await startGateway(t, JSON.stringify({ http, upstreams: [{ name: 'up', transport: 'streamable-http', url: upstream.url }] }))
  await waitReady(gw)
  return gw
}

function wsUrl (gw: RunningGateway): string {
  return gw.url.replace(/^http/, 'ws')
}

/** A raw WebSocket to the gateway that collects every message it receives; closed when the test ends. */
async function openSocket (t: TestContext, url: string, options: ClientOptions = {}): Promise<{ ws: WebSocket, inbox: Message[] }> {
  const ws = new WebSocket(url, 'mcp', options)
  const inbox: Message[] = []
  ws.on('message', (data) => { inbox.push(JSON.parse(String(data)) as Message) })
  t.after(() => { ws.terminate() })
  await once(ws, 'open', { signal: AbortSignal.timeout(WAIT_MS) })
  return { ws, inbox }
}

async function nextMessage (inbox: Message[], index: number): Promise<Message> {
  return await waitFor(() => inbox[index], `message #${index}`, WAIT_MS)
}

async function closeOf (ws: WebSocket): Promise<{ code: number, reason: string }> {
  const [code, reason] = await once(ws, 'close', { signal: AbortSignal.timeout(WAIT_MS) }) as [number, Buffer]
  return { code, reason: String(reason) }
}

function initialize (ws: WebSocket, id = 1): void {
  ws.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-ws', version: '1' } } }))
}

async function sessionsActive (gw: RunningGateway, transport: string): Promise<number | undefined> {
  return metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_sessions_active', { transport })
}

test('an SDK client over WebSocket lists and calls tools, gets progress and answers a relayed sampling request', async (t) => {
  const gw = await gatewayWithUpstream(t)
  const client = new Client({ name: 'ws-client', version: '1.0.0' }, { capabilities: { sampling: {} } })
  const prompts: string[] = []
  client.setRequestHandler('sampling/createMessage', async (request) => {
    const content = request.params.messages[0]?.content
    const prompt = content !== undefined && !Array.isArray(content) && content.type === 'text' ? content.text : ''
    prompts.push(prompt)
    return { role: 'assistant', model: 'ws-model', content: { type: 'text', text: `echo ${prompt}` } }
  })
  await client.connect(new WebSocketClientTransport(new URL(wsUrl(gw))) as never)
  t.after(async () => { await client.close().catch(() => {}) })
  assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25')
  assert.equal(await sessionsActive(gw, 'websocket'), 1)

  const names = (await client.listTools()).tools.map(tool => tool.name)
  assert.ok(names.includes('up__echo') && names.includes('up__slow') && names.includes('up__ask'))
  assert.equal(textOf(await client.callTool({ name: 'up__echo', arguments: { text: 'over a socket' } })), 'over a socket')

  const progress: number[] = []
  const slow = await client.callTool({ name: 'up__slow', arguments: { ms: 30, steps: 3 } }, { onprogress: (p) => { progress.push(p.progress) } })
  assert.equal(textOf(slow), 'done')
  assert.deepEqual(progress, [1, 2, 3])

  const asked = await client.callTool({ name: 'up__ask', arguments: { prompt: 'hello socket' } })
  assert.equal(textOf(asked), 'sampled: echo hello socket')
  assert.deepEqual(prompts, ['hello socket'])
})

test('a raw WebSocket negotiates subprotocol mcp and gets JSON-RPC errors for bad JSON, batches and requests before initialize', async (t) => {
  const gw = await startGateway(t, NO_UPSTREAMS)
  const { ws, inbox } = await openSocket(t, wsUrl(gw))
  assert.equal(ws.protocol, 'mcp')

  ws.send('{"jsonrpc":"2.0",')
  assert.deepEqual((await nextMessage(inbox, 0)), { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the message is not valid JSON' } })
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }))
  const early = await nextMessage(inbox, 1)
  assert.equal(early.id, 7)
  assert.equal(early.error?.code, -32600)
  ws.send(JSON.stringify([{ jsonrpc: '2.0', id: 8, method: 'ping' }]))
  const batch = await nextMessage(inbox, 2)
  assert.equal(batch.id, null)
  assert.equal(batch.error?.code, -32600)
  assert.equal(gw.gateway.sessions.size, 0, 'nothing before initialize opens a session')

  initialize(ws)
  const init = await nextMessage(inbox, 3)
  assert.equal(init.id, 1)
  assert.equal(init.result?.protocolVersion, '2025-11-25')
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }))
  assert.deepEqual(await nextMessage(inbox, 4), { jsonrpc: '2.0', id: 2, result: { tools: [] } })
  ws.send('not json at all')
  assert.equal((await nextMessage(inbox, 5)).error?.code, -32700, 'a parse error does not end the session')
  assert.equal(ws.readyState, WebSocket.OPEN)
})

test('a binary frame closes the socket with 1003 and ends its session; an oversize frame closes it with 1009', async (t) => {
  const gw = await startGateway(t, 'http: { maxBodyBytes: 2048 }\nupstreams: []\n')
  const { ws, inbox } = await openSocket(t, wsUrl(gw))
  initialize(ws)
  await nextMessage(inbox, 0)
  assert.equal(gw.gateway.sessions.size, 1)
  const closed = closeOf(ws)
  ws.send(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' })), { binary: true })
  assert.equal((await closed).code, 1003)
  await waitFor(() => gw.gateway.sessions.size === 0, 'the session to end', WAIT_MS)

  const big = await openSocket(t, wsUrl(gw))
  const bigClosed = closeOf(big.ws)
  big.ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { padding: 'x'.repeat(4096) } }))
  assert.equal((await bigClosed).code, 1009, 'frames are bounded by http.maxBodyBytes')
})

test('a foreign Origin or Host is refused with 403 at the upgrade; loopback origins pass', async (t) => {
  const gw = await startGateway(t, NO_UPSTREAMS)
  const port = new URL(gw.url).port
  const statusOf = async (options: ClientOptions): Promise<number> => {
    const ws = new WebSocket(wsUrl(gw), 'mcp', options)
    ws.on('error', () => {})
    const [, res] = await once(ws, 'unexpected-response', { signal: AbortSignal.timeout(WAIT_MS) }) as [unknown, { statusCode: number, resume: () => void }]
    res.resume()
    ws.terminate()
    return res.statusCode
  }
  assert.equal(await statusOf({ origin: 'http://evil.example.com' }), 403)
  assert.equal(await statusOf({ headers: { host: `evil.example.com:${port}` } }), 403)
  const { ws } = await openSocket(t, wsUrl(gw), { origin: `http://localhost:${port}` })
  assert.equal(ws.protocol, 'mcp')
  assert.equal(gw.gateway.sessions.size, 0)
  const rejections = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(rejections, 'switchboard_http_rejections_total', { reason: 'origin' }), 2)
})

test('closing the socket deletes the session and the websocket session gauge returns to 0', async (t) => {
  const gw = await startGateway(t, NO_UPSTREAMS)
  const { ws, inbox } = await openSocket(t, wsUrl(gw))
  initialize(ws)
  await nextMessage(inbox, 0)
  assert.equal(gw.gateway.sessions.size, 1)
  assert.equal(await sessionsActive(gw, 'websocket'), 1)
  ws.close(1000)
  await waitFor(async () => await sessionsActive(gw, 'websocket') === 0, 'the websocket gauge to drop', WAIT_MS)
  assert.equal(gw.gateway.sessions.size, 0)
})

test('a client that does not answer pings is terminated while one that does stays connected', async (t) => {
  const gw = await startGateway(t, 'http: { keepAliveMs: 100 }\nupstreams: []\n')
  const silent = await openSocket(t, wsUrl(gw), { autoPong: false })
  const healthy = await openSocket(t, wsUrl(gw))
  let healthyPings = 0
  healthy.ws.on('ping', () => { healthyPings++ })
  initialize(silent.ws)
  initialize(healthy.ws)
  await nextMessage(silent.inbox, 0)
  await nextMessage(healthy.inbox, 0)
  assert.equal(gw.gateway.sessions.size, 2)

  const { code } = await closeOf(silent.ws)
  assert.equal(code, 1006, 'terminated without a close frame')
  await waitFor(() => gw.gateway.sessions.size === 1, 'the silent client\'s session to end', WAIT_MS)
  await waitFor(() => healthyPings >= 3, 'the healthy client to answer a few more pings', WAIT_MS)
  assert.equal(healthy.ws.readyState, WebSocket.OPEN)
  healthy.ws.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }))
  assert.deepEqual(await nextMessage(healthy.inbox, 1), { jsonrpc: '2.0', id: 2, result: {} })
})

test('a client that stops reading is cut off once too much is buffered for it', async (t) => {
  const gw = await gatewayWithUpstream(t, { maxBodyBytes: 2 * 1024 * 1024 })
  const { ws, inbox } = await openSocket(t, wsUrl(gw))
  initialize(ws)
  await nextMessage(inbox, 0)
  // Stop reading: the kernel buffers fill up and the gateway's unsent data grows past its bound.
  const raw = (ws as unknown as { _socket: { pause: () => void } })._socket
  raw.pause()
  const text = 'x'.repeat(1024 * 1024)
  // Each answer carries the text twice (content and structuredContent): ~60 MiB in all.
  for (let id = 10; id < 40; id++) ws.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'up__echo', arguments: { text } } }))
  await waitFor(() => gw.logs.some(line => line.msg === 'websocket client is not reading; disconnecting it'), 'the slow reader to be cut off', 60_000)
  await waitFor(() => gw.gateway.sessions.size === 0, 'its session to end', WAIT_MS)
  const cutOff = gw.logs.find(line => line.msg === 'websocket client is not reading; disconnecting it')
  assert.ok(Number(cutOff?.bufferedBytes) > 8 * 1024 * 1024)
})

test('an SDK client over legacy HTTP+SSE lists and calls tools', async (t) => {
  const gw = await gatewayWithUpstream(t)
  const client = new Client({ name: 'sse-client', version: '1.0.0' })
  await client.connect(new SSEClientTransport(new URL(`${gw.baseUrl}/sse`)))
  t.after(async () => { await client.close().catch(() => {}) })
  assert.equal(await sessionsActive(gw, 'sse'), 1)
  const names = (await client.listTools()).tools.map(tool => tool.name)
  assert.ok(names.includes('up__echo'))
  assert.equal(textOf(await client.callTool({ name: 'up__echo', arguments: { text: 'the old way' } })), 'the old way')
  const progress: number[] = []
  const slow = await client.callTool({ name: 'up__slow', arguments: { ms: 30, steps: 2 } }, { onprogress: (p) => { progress.push(p.progress) } })
  assert.equal(textOf(slow), 'done')
  assert.deepEqual(progress, [1, 2])
})

test('legacy SSE: the endpoint event names the POST URI, answers come as message events, unknown ids 404, closing ends the session', async (t) => {
  const gw = await startGateway(t, NO_UPSTREAMS)
  const stream = new AbortController()
  const res = await fetch(`${gw.baseUrl}/sse`, { headers: { accept: 'text/event-stream' }, signal: AbortSignal.any([stream.signal, AbortSignal.timeout(WAIT_MS)]) })
  t.after(() => { stream.abort() })
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('content-type'), 'text/event-stream')
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let seen = ''
  const readUntil = async (pattern: RegExp): Promise<RegExpExecArray> => {
    for (;;) {
      const match = pattern.exec(seen)
      if (match !== null) return match
      const { value, done } = await reader.read()
      if (done) throw new Error(`stream ended before ${String(pattern)}`)
      seen += decoder.decode(value, { stream: true })
    }
  }
  const [, endpoint] = await readUntil(/^event: endpoint\ndata: (\/messages\?sessionId=[A-Za-z0-9_%-]+)\n\n/)
  assert.ok(endpoint !== undefined)

  const post = async (path: string, body: unknown): Promise<Response> => await fetch(`${gw.baseUrl}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body)
  })
  const ping = { jsonrpc: '2.0', id: 1, method: 'ping' }
  assert.equal((await post('/messages?sessionId=no-such-session', ping)).status, 404)
  assert.equal((await post('/messages', ping)).status, 400)

  const init = await post(endpoint, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'raw-sse', version: '1' } } })
  assert.equal(init.status, 202)
  const [, data] = await readUntil(/event: message\ndata: (.+)\n\n/)
  const answer = JSON.parse(data ?? '') as Message
  assert.equal(answer.id, 1)
  assert.equal(answer.result?.protocolVersion, '2024-11-05')
  assert.equal(gw.gateway.sessions.size, 1)
  assert.equal(await sessionsActive(gw, 'sse'), 1)

  stream.abort()
  await waitFor(() => gw.gateway.sessions.size === 0, 'the session to end with its stream', WAIT_MS)
  assert.equal(await sessionsActive(gw, 'sse'), 0)
  assert.equal((await post(endpoint, ping)).status, 404, 'the endpoint is gone with its stream')
})
