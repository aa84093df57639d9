import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request as httpRequest } from 'node:http'
import { connectClient, metricValue, rawInitialize, rawPost, scrapeMetrics, startGateway, waitFor } from '../helpers/start-gateway.ts'

const NO_UPSTREAMS = 'upstreams: []\n'

async function rpcBody (res: Response): Promise<{ error?: { code: number, message: string }, result?: Record<string, unknown> }> {
  return await res.json() as { error?: { code: number, message: string }, result?: Record<string, unknown> }
}

/** fetch() will not send a foreign Host header, so that check goes through node:http. */
function postWithHost (url: string, host: string, origin?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, {
      method: 'POST',
      headers: { host, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(origin === undefined ? {} : { origin }) }
    }, (res) => { res.resume(); resolve(res.statusCode ?? 0) })
    req.on('error', reject)
    req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }))
  })
}

test('initialize negotiates the version, issues a random session id and advertises what the gateway relays', async (t) => {
  const gw = await startGateway(t, NO_UPSTREAMS)
  const a = await rawInitialize(gw.url)
  const b = await rawInitialize(gw.url, '2024-11-05')
  const c = await rawInitialize(gw.url, '1999-01-01')
  assert.equal(a.result.protocolVersion, '2025-11-25')
  assert.equal(b.result.protocolVersion, '2024-11-05')
  assert.equal(c.result.protocolVersion, '2025-11-25', 'an unknown version is answered with the latest')
  assert.deepEqual(a.result.capabilities, {
    tools: { listChanged: true },
    prompts: { listChanged: true },
    resources: { subscribe: true, listChanged: true },
    completions: {},
    logging: {},
    tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } }
  })
  assert.equal(b.result.capabilities && (b.result.capabilities as Record<string, unknown>).tasks, undefined, 'tasks came with 2025-11-25')
  assert.match(a.sessionId, /^[\x21-\x7E]{32,}$/)
  assert.notEqual(a.sessionId, b.sessionId)
})

test('requests without a session id get 400, unknown ones 404, and a DELETEd session is gone', async (t) => {
  const gw = await startGateway(t, NO_UPSTREAMS)
  const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' }
  const missing = await rawPost(gw.url, list)
  assert.equal(missing.status, 400)
  assert.equal((await rpcBody(missing)).error?.code, -32000)
  const unknown = await rawPost(gw.url, list, { 'mcp-session-id': 'no-such-session' })
  assert.equal(unknown.status, 404)

  const { sessionId } = await rawInitialize(gw.url)
  const ok = await rawPost(gw.url, list, { 'mcp-session-id': sessionId })
  assert.equal(ok.status, 200)
  assert.deepEqual((await rpcBody(ok)).result, { tools: [] })
  const del = await fetch(gw.url, { method: 'DELETE', headers: { 'mcp-session-id': sessionId } })
  assert.equal(del.status, 200)
  const after = await rawPost(gw.url, list, { 'mcp-session-id': sessionId })
  assert.equal(after.status, 404)
  const delAgain = await fetch(gw.url, { method: 'DELETE', headers: { 'mcp-session-id': sessionId } })
  assert.equal(delAgain.status, 404)
})

test('malformed JSON is 400 with -32700, a non-JSON-RPC body 400 with -32600, and a batch is refused', async (t) => {
  const gw = await startGateway(t, NO_UPSTREAMS)
  const bad = await rawPost(gw.url, '{"jsonrpc":"2.0",')
  assert.equal(bad.status, 400)
  assert.equal((await rpcBody(bad)).error?.code, -32700)
  const notRpc = await rawPost(gw.url, { hello: 'world' })
  assert.equal(notRpc.status, 400)
  assert.equal((await rpcBody(notRpc)).error?.code, -32600)
  const nullId = await rawPost(gw.url, { jsonrpc: '2.0', id: null, method: 'ping' })
  assert.equal(nullId.status, 400)
  const batch = await rawPost(gw.url, [{ jsonrpc: '2.0', id: 1, method: 'ping' }])
  assert.equal(batch.status, 400)
})

test('wrong Accept is 406, wrong Content-Type 415, an oversize body 413, other methods 405', async (t) => {
  const gw = await startGateway(t, 'http: { maxBodyBytes: 2048 }\nupstreams: []\n')
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }
  const accept = await rawPost(gw.url, init, { accept: 'application/json' })
  assert.equal(accept.status, 406)
  const type = await fetch(gw.url, { method: 'POST', headers: { 'content-type': 'text/plain', accept: 'application/json, text/event-stream' }, body: 'hi' })
  assert.equal(type.status, 415)
  assert.equal((await rpcBody(type)).error?.code, -32600)
  const big = await rawPost(gw.url, { ...init, params: { ...init.params, padding: 'x'.repeat(4096) } })
  assert.equal(big.status, 413)
  const put = await fetch(gw.url, { method: 'PUT' })
  assert.equal(put.status, 405)
  const text = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(text, 'switchboard_http_rejections_total', { reason: 'too_large' }), 1)
})

test('a foreign Host or Origin is refused (DNS rebinding) while loopback ones pass', async (t) => {
  const gw = await startGateway(t, NO_UPSTREAMS)
  const port = new URL(gw.url).port
  assert.equal(await postWithHost(gw.url, 'evil.example.com', 'http://evil.example.com'), 403)
  assert.equal(await postWithHost(gw.url, `evil.example.com:${port}`), 403)
  assert.equal(await postWithHost(gw.url, `127.0.0.1:${port}`, 'http://evil.example.com'), 403)
  assert.equal(await postWithHost(gw.url, `127.0.0.1:${port}`), 200)
  assert.equal(await postWithHost(gw.url, `localhost:${port}`, `http://localhost:${port}`), 200)
})

test('an unsupported MCP-Protocol-Version is 400 with a plain -32000 error', async (t) => {
  const gw = await startGateway(t, NO_UPSTREAMS)
  const { sessionId } = await rawInitialize(gw.url)
  const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 2, method: 'ping' }, { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2026-07-28' })
  assert.equal(res.status, 400)
  assert.equal((await rpcBody(res)).error?.code, -32000)
  const older = await rawPost(gw.url, { jsonrpc: '2.0', id: 3, method: 'ping' }, { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' })
  assert.equal(older.status, 200, 'a supported version other than the negotiated one is tolerated')
})

test('notifications are accepted with 202, unknown methods are -32601, and ping is answered by the gateway', async (t) => {
  const gw = await startGateway(t, NO_UPSTREAMS)
  const { sessionId } = await rawInitialize(gw.url)
  const headers = { 'mcp-session-id': sessionId }
  const notification = await rawPost(gw.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers)
  assert.equal(notification.status, 202)
  assert.equal(await notification.text(), '')
  const unknown = await rawPost(gw.url, { jsonrpc: '2.0', id: 5, method: 'no/such-method' }, headers)
  assert.equal((await rpcBody(unknown)).error?.code, -32601)
  const ping = await rawPost(gw.url, { jsonrpc: '2.0', id: 6, method: 'ping' }, headers)
  assert.deepEqual(await ping.json(), { jsonrpc: '2.0', id: 6, result: {} })
  const reinit = await rawPost(gw.url, { jsonrpc: '2.0', id: 7, method: 'initialize', params: {} }, headers)
  assert.equal(reinit.status, 400)
})

test('an invalid cursor is -32602', async (t) => {
  const gw = await startGateway(t, NO_UPSTREAMS)
  const { sessionId } = await rawInitialize(gw.url)
  const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { cursor: 'not-a-cursor' } }, { 'mcp-session-id': sessionId })
  assert.equal((await rpcBody(res)).error?.code, -32602)
})

test('the GET stream is SSE with keepalive comments and is replaced, not refused, on reconnect', async (t) => {
  const gw = await startGateway(t, 'http: { keepAliveMs: 50 }\nupstreams: []\n')
  const { sessionId } = await rawInitialize(gw.url)
  const refused = await fetch(gw.url, { headers: { accept: 'application/json', 'mcp-session-id': sessionId } })
  assert.equal(refused.status, 406)
  const first = await fetch(gw.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sessionId } })
  assert.equal(first.status, 200)
  assert.equal(first.headers.get('content-type'), 'text/event-stream')
  assert.equal(first.headers.get('x-accel-buffering'), 'no')
  const reader = first.body!.getReader()
  let seen = ''
  while (!seen.includes(': keepalive')) seen += new TextDecoder().decode((await reader.read()).value)
  assert.match(seen, /^id: [A-Za-z0-9_-]+\.0\nretry: \d+\ndata: \n\n/, 'a 2025-11-25 client first gets a priming event to resume from')
  const second = await fetch(gw.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sessionId } })
  assert.equal(second.status, 200)
  const ended = await waitFor(async () => (await reader.read()).done, 'the first stream to end')
  assert.equal(ended, true)
  await second.body!.cancel()
})

test('idle sessions expire and then answer 404', async (t) => {
  const gw = await startGateway(t, 'http: { sessionIdleMs: 200 }\nupstreams: []\n')
  const { sessionId } = await rawInitialize(gw.url)
  await waitFor(() => gw.gateway.sessions.size === 0, 'the session to expire', 5000)
  const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 2, method: 'ping' }, { 'mcp-session-id': sessionId })
  assert.equal(res.status, 404)
})

test('the SDK client connects, pings and lists an empty catalog; sessions are counted in metrics', async (t) => {
  const gw = await startGateway(t, NO_UPSTREAMS)
  const client = await connectClient(t, gw.url)
  await client.ping()
  assert.deepEqual((await client.listTools()).tools, [])
  assert.equal(metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_sessions_active', { transport: 'streamable-http' }), 1)
  const health = await fetch(`${gw.baseUrl}/healthz`)
  assert.equal(health.status, 200)
})
