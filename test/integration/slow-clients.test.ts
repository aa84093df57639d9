import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import net, { type AddressInfo, type Server } from 'node:net'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { WebSocket } from 'ws'
import { fixtureCommand } from '../helpers/spawn-fixture.ts'
import { connectClient, metricValue, rawInitialize, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'
import { readEvents } from '../helpers/sse-events.ts'
import type { TimeoutKind } from '../../src/http/client-error.ts'

// Slow and half-open clients: http.headersTimeoutMs and http.requestTimeoutMs bound how long a
// client may take to send a request; what the gateway sends back (an SSE stream, a WebSocket, a
// slow answer) is not bounded by them.

const HEADERS_TIMEOUT_MS = 1_000
const REQUEST_TIMEOUT_MS = 2_000
/**
 * The slowloris test's: long enough that a client connecting and calling five times is served while
 * the slow ones still hold their connections, even on a busy CI machine (at 1 s and 2 s one run saw
 * them all dropped first).
 */
const SLOWLORIS_TIMEOUTS = { headersTimeoutMs: 4_000, requestTimeoutMs: 6_000 }
const SLOWLORIS = 20
const DRIP_MS = 200
const WAIT_MS = 15_000

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean }

async function gateway (t: TestContext, timeouts = { headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: REQUEST_TIMEOUT_MS }): Promise<RunningGateway> {
  const local = fixtureCommand(['--name', 'local'])
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'local', transport: 'stdio', command: local.command, args: local.args }],
    http: { ...timeouts, keepAliveMs: 500 }
  }))
  await waitReady(gw)
  return gw
}

interface Dribbler { socket: net.Socket, closed: boolean, received: string, stop: () => void }

/**
 * A raw connection that starts a request and then sends it a little at a time, forever: half its
 * headers (a header line per tick), or complete headers and a body a byte per tick.
 */
async function dribble (port: number, part: 'headers' | 'body'): Promise<Dribbler> {
  const socket = net.connect(port, '127.0.0.1')
  await once(socket, 'connect')
  const state: Dribbler = { socket, closed: false, received: '', stop: () => {} }
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => { state.received += chunk })
  socket.on('error', () => {})
  socket.on('close', () => { state.closed = true })
  socket.write(part === 'headers'
    ? 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n'
    : 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 100000\r\n\r\n{')
  let n = 0
  const timer = setInterval(() => {
    if (state.closed) return
    socket.write(part === 'headers' ? `x-slow-${n++}: a\r\n` : ' ')
  }, DRIP_MS)
  state.stop = () => {
    clearInterval(timer)
    socket.destroy()
  }
  return state
}

test('a slowloris of bounded count is dropped after the header and request timeouts while a normal client is served meanwhile', { timeout: 60_000 }, async (t) => {
  const gw = await gateway(t, SLOWLORIS_TIMEOUTS)
  const port = Number(new URL(gw.baseUrl).port)
  const dribblers: Dribbler[] = []
  // Stopped here, not in t.after: the gateway's close (an earlier hook) waits for busy connections.
  try {
    for (let i = 0; i < SLOWLORIS; i++) dribblers.push(await dribble(port, i % 2 === 0 ? 'headers' : 'body'))

    // Served meanwhile, on new connections, while every dribbler is still sending.
    const client = await connectClient(t, gw.url)
    for (let i = 0; i < 5; i++) {
      const echo = await client.callTool({ name: 'local__echo', arguments: { text: `meanwhile ${i}` } }) as ToolResult
      assert.equal(echo.content[0]?.text, `meanwhile ${i}`)
    }
    assert.ok(dribblers.some(d => !d.closed), 'the dribblers were still connected while the client was served')

    await waitFor(() => dribblers.every(d => d.closed), 'every slow connection to be dropped', WAIT_MS)
    for (const d of dribblers) assert.match(d.received, /^(HTTP\/1\.1 408 |$)/, `dropped with 408 or nothing: ${d.received.slice(0, 80)}`)
    const echo = await client.callTool({ name: 'local__echo', arguments: { text: 'after' } }) as ToolResult
    assert.equal(echo.content[0]?.text, 'after')
  } finally {
    for (const d of dribblers) d.stop()
  }
})

interface Deaf { closed: boolean, stop: () => void }

/**
 * A connection that never reads what the gateway sends (so it never sees the 408 nor the gateway's
 * FIN, and never closes its own side): it sends nothing (idle), drips header lines (headers), or
 * sends complete headers and drips the body (request).
 */
async function deaf (port: number, kind: TimeoutKind): Promise<Deaf> {
  const socket = net.connect(port, '127.0.0.1')
  await once(socket, 'connect')
  socket.pause()
  const state: Deaf = { closed: false, stop: () => {} }
  socket.on('error', () => {})
  socket.on('close', () => { state.closed = true })
  if (kind === 'headers') socket.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n')
  if (kind === 'request') socket.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{')
  let n = 0
  const timer = setInterval(() => {
    if (state.closed || kind === 'idle') return
    socket.write(kind === 'headers' ? `x-slow-${n++}: a\r\n` : ' ')
  }, DRIP_MS)
  state.stop = () => {
    clearInterval(timer)
    socket.destroy()
  }
  return state
}

const ADMIN_TOKEN = 'admin-token-for-slow-clients-0123456789'

/** A gateway without upstreams (nothing to wait for) and with its admin listener open too. */
async function bareGateway (t: TestContext): Promise<{ gw: RunningGateway, adminServer: Server }> {
  const gw = await startGateway(t, JSON.stringify({
    http: { headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: REQUEST_TIMEOUT_MS },
    // eslint-disable-next-line no-template-curly-in-string -- the config's own ${VAR} syntax
    admin: { listen: { port: 0 }, token: '${ADMIN_TOKEN}' }
  }), { ...process.env, ADMIN_TOKEN })
  if (gw.admin === undefined) throw new Error('no admin listener')
  await gw.admin.listen({ host: '127.0.0.1', port: 0 })
  return { gw, adminServer: gw.admin.server }
}

async function connectionCount (server: Server): Promise<number> {
  return await new Promise((resolve, reject) => {
    server.getConnections((err, count) => { if (err === null) resolve(count); else reject(err) })
  })
}

/** Opens deaf clients of each kind on `server` and waits for the server to have dropped them all. */
async function dropsDeafClients (server: Server, kinds: Record<TimeoutKind, number>): Promise<void> {
  const port = (server.address() as AddressInfo).port
  const clients: Array<{ kind: TimeoutKind, client: Deaf }> = []
  try {
    for (const [kind, count] of Object.entries(kinds) as Array<[TimeoutKind, number]>) {
      for (let i = 0; i < count; i++) clients.push({ kind, client: await deaf(port, kind) })
    }
    await waitFor(async () => await connectionCount(server) === clients.length, 'the listener to hold every connection')
    // The gateway's side, not the client's: after a half-close (408, FIN) alone, all were still held 12 s later.
    await waitFor(async () => await connectionCount(server) === 0, 'the listener to drop every connection that timed out', WAIT_MS)
    // Those that keep writing learn it from the reset.
    await waitFor(() => clients.every(c => c.client.closed || c.kind === 'idle'), 'the dripping clients to see their connection closed', WAIT_MS)
  } finally {
    for (const c of clients) c.client.stop()
  }
}

test('connections that time out and never read are destroyed by the gateway, whatever the client does, and counted by kind in switchboard_http_timeouts_total', { timeout: 60_000 }, async (t) => {
  const { gw } = await bareGateway(t)
  const kinds = { headers: 12, request: 4, idle: 4 }
  await dropsDeafClients(gw.app.server, kinds)
  const exposition = await scrapeMetrics(gw.baseUrl)
  for (const [kind, count] of Object.entries(kinds)) {
    assert.equal(metricValue(exposition, 'switchboard_http_timeouts_total', { kind }), count, `${kind} timeouts counted`)
  }
})

test('the admin listener drops connections that time out and never read as the MCP listener does, with its timeouts', { timeout: 60_000 }, async (t) => {
  const { gw, adminServer } = await bareGateway(t)
  const kinds = { headers: 2, request: 1, idle: 1 }
  await dropsDeafClients(adminServer, kinds)
  const exposition = await scrapeMetrics(gw.baseUrl)
  for (const [kind, count] of Object.entries(kinds)) {
    assert.equal(metricValue(exposition, 'switchboard_http_timeouts_total', { kind }), count, `${kind} timeouts counted`)
  }
})

test('an SSE stream, a WebSocket and a slow answer outlive http.requestTimeoutMs: it bounds receiving a request, not the response', { timeout: 60_000 }, async (t) => {
  const gw = await gateway(t)
  const { sessionId } = await rawInitialize(gw.url)
  const stream = new AbortController()
  t.after(() => { stream.abort() })
  const res = await fetch(gw.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sessionId }, signal: stream.signal })
  assert.equal(res.status, 200)

  const ws = new WebSocket(gw.url.replace(/^http/, 'ws'), 'mcp')
  t.after(() => { ws.terminate() })
  await once(ws, 'open')
  const inbox: Array<{ id?: unknown, result?: { content?: Array<{ text?: string }> } }> = []
  ws.on('message', (data) => { inbox.push(JSON.parse(String(data)) as typeof inbox[number]) })

  // A call whose answer takes longer than requestTimeoutMs, sent right away: its request was received in time.
  const client = await connectClient(t, gw.url)
  const slow = client.callTool({ name: 'local__slow', arguments: { ms: REQUEST_TIMEOUT_MS * 2 } }, { timeout: WAIT_MS }) as Promise<ToolResult>
  await sleep(REQUEST_TIMEOUT_MS * 2)
  assert.equal((await slow).content[0]?.text, 'done', 'the slow answer arrived')

  // The stream is still open: a list change reaches it.
  const events = readEvents(res, found => found.some(e => e.data.includes('notifications/tools/list_changed')))
  await client.callTool({ name: 'local__add_tool', arguments: { name: 'later' } })
  assert.ok((await events).some(e => e.data.includes('notifications/tools/list_changed')), 'the SSE stream carried the list change')

  // The WebSocket too: it is served after the same wait.
  assert.equal(ws.readyState, WebSocket.OPEN)
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-ws', version: '1' } } }))
  await waitFor(() => inbox.find(m => m.id === 1), 'the WebSocket answer', WAIT_MS)
})

test('a client that opens a legacy SSE stream and never initializes does not hold the gateway\'s close', { timeout: 60_000 }, async (t) => {
  const gw = await startGateway(t, '{}')
  const stream = new AbortController()
  t.after(() => { stream.abort() })
  const res = await fetch(`${gw.baseUrl}/sse`, { headers: { accept: 'text/event-stream' }, signal: stream.signal })
  const events = readEvents(res, found => found.length > 0)
  assert.match((await events)[0]?.data ?? '', /^\/messages\?sessionId=/)
  const second = await fetch(`${gw.baseUrl}/sse`, { headers: { accept: 'text/event-stream' }, signal: stream.signal })
  const ended = second.text().then(() => 'ended', () => 'ended')
  await gw.close()
  assert.equal(await ended, 'ended', 'the quiet stream was ended by the close')
})
