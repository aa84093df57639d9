import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { MODERN, modernEverythingConfig } from '../helpers/modern-era.ts'
import { connectClient, metricValue, rawPost, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

// A real 2025-11-25 upstream (server-everything over stdio) behind the gateway, and a real
// 2026-07-28 client (the official SDK pinned to that revision: server/discover, no session).
const CONFIG = modernEverythingConfig()
const ENVELOPE = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} }

interface Rpc { id?: unknown, result?: Record<string, unknown>, error?: { code: number, message: string, data?: Record<string, unknown> } }

async function gateway (t: TestContext): Promise<RunningGateway> {
  const gw = await startGateway(t, CONFIG)
  await waitReady(gw)
  return gw
}

async function modernClient (t: TestContext, url: string): Promise<Client> {
  const client = new Client({ name: 'modern-client', version: '1.0.0' }, { capabilities: {}, versionNegotiation: { mode: { pin: MODERN } } })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  t.after(async () => { await client.close().catch(() => {}) })
  return client
}

/** A modern request as the revision wants it on the wire: envelope in _meta, method (and name) in headers. */
async function modernPost (url: string, method: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}, id: number | string = 1): Promise<{ status: number, body: Rpc }> {
  const res = await rawPost(url, { jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...ENVELOPE, ...(params._meta as object | undefined) } } }, {
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
    ...(typeof params.name === 'string' ? { 'mcp-name': params.name } : {}),
    ...(typeof params.uri === 'string' ? { 'mcp-name': params.uri } : {}),
    ...headers
  })
  return { status: res.status, body: await res.json() as Rpc }
}

test('a 2026-07-28 client (the SDK pinned to the revision) discovers the gateway, lists and calls the tools of a 2025-11-25 upstream, with no session', { timeout: 60_000 }, async (t) => {
  const gw = await gateway(t)
  const client = await modernClient(t, gw.url)
  const tools = await client.listTools()
  assert.ok(tools.tools.some(tool => tool.name === 'everything__echo'), 'the namespaced catalog')
  const result = await client.callTool({ name: 'everything__echo', arguments: { message: 'modern hello' } }) as { content: Array<{ text?: string }> }
  assert.equal(result.content[0]?.text, 'Echo: modern hello', 'the upstream\'s own result')
  assert.equal(gw.gateway.sessions.size, 0, 'no session was opened for it')
  assert.equal(metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_tool_calls_total', { upstream: 'everything', tool: 'everything__echo', outcome: 'ok', endpoint: '' }), 1, 'counted like any call')

  // The upstream's sampling request during a modern call cannot reach the client yet (no
  // input_required bridge): it is refused at once, as for a client without the capability.
  const sampled = await client.callTool({ name: 'everything__trigger-sampling-request', arguments: { prompt: 'p', maxTokens: 5 } }).then(r => JSON.stringify(r), (err: Error) => err.message)
  assert.match(sampled, /did not declare the sampling capability/)

  // The SDK's auto negotiation probes with server/discover and, offered 2026-07-28, takes it.
  const auto = new Client({ name: 'auto-client', version: '1.0.0' }, { versionNegotiation: { mode: 'auto', probe: { timeoutMs: 5_000 } } })
  await auto.connect(new StreamableHTTPClientTransport(new URL(gw.url)))
  t.after(async () => { await auto.close().catch(() => {}) })
  assert.equal(auto.getProtocolEra(), 'modern')
  assert.equal(auto.getNegotiatedProtocolVersion(), MODERN)

  // A 2025-11-25 client on the same path at the same time gets its session, as before.
  const legacy = await connectClient(t, gw.url)
  assert.ok((await legacy.listTools()).tools.some(tool => tool.name === 'everything__echo'))
  assert.equal(gw.gateway.sessions.size, 1)
})

test('server/discover and every result carry what 2026-07-28 requires: resultType, ttlMs and cacheScope on lists and reads, the server\'s identity in _meta', { timeout: 60_000 }, async (t) => {
  const gw = await gateway(t)
  const discover = await modernPost(gw.url, 'server/discover')
  assert.equal(discover.status, 200)
  const found = discover.body.result as Record<string, unknown>
  assert.deepEqual(found.supportedVersions, [MODERN])
  assert.equal(found.resultType, 'complete')
  assert.equal(found.ttlMs, 0)
  assert.equal(found.cacheScope, 'private')
  assert.ok((found.capabilities as Record<string, unknown>).tools !== undefined)
  assert.equal(((found._meta as Record<string, Record<string, unknown>>)['io.modelcontextprotocol/serverInfo'])?.name, 'switchboard')
  assert.equal(found.serverInfo, undefined, 'the identity moved to _meta')

  for (const method of ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list']) {
    const { status, body } = await modernPost(gw.url, method)
    assert.equal(status, 200, method)
    assert.equal(body.result?.resultType, 'complete', method)
    assert.equal(body.result?.ttlMs, 0, method)
    assert.equal(body.result?.cacheScope, 'private', method)
  }
  const call = await modernPost(gw.url, 'tools/call', { name: 'everything__echo', arguments: { message: 'x' } })
  assert.equal(call.body.result?.resultType, 'complete')
  assert.equal(call.body.result?.ttlMs, undefined, 'a tool result is not cacheable')
})

test('a 2026-07-28 request that fails the revision\'s checks gets its status and code: -32022 with what is supported, -32020 for headers that contradict the body, -32602 for a broken envelope and a missing resource, 404 for removed methods', async (t) => {
  const gw = await startGateway(t, 'http: { modernClients: true }\nupstreams: []\n')
  const unsupported = await modernPost(gw.url, 'tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } }, { 'mcp-protocol-version': '2099-01-01' })
  assert.equal(unsupported.status, 400)
  assert.equal(unsupported.body.error?.code, -32022)
  assert.deepEqual(unsupported.body.error?.data, { supported: [MODERN], requested: '2099-01-01' })
  assert.equal(unsupported.body.id, 1, 'the error echoes the request id')

  const methodMismatch = await modernPost(gw.url, 'tools/list', {}, { 'mcp-method': 'prompts/list' })
  assert.equal(methodMismatch.status, 400)
  assert.equal(methodMismatch.body.error?.code, -32020)
  const versionMismatch = await modernPost(gw.url, 'tools/list', {}, { 'mcp-protocol-version': '2025-11-25' })
  assert.equal(versionMismatch.body.error?.code, -32020)
  const nameMismatch = await modernPost(gw.url, 'tools/call', { name: 'a__b', arguments: {} }, { 'mcp-name': 'c__d' })
  assert.equal(nameMismatch.status, 400)
  assert.equal(nameMismatch.body.error?.code, -32020)
  const base64Name = await modernPost(gw.url, 'tools/call', { name: 'a__b', arguments: {} }, { 'mcp-name': `=?base64?${Buffer.from('a__b').toString('base64')}?=` })
  assert.equal(base64Name.status, 200, 'a base64-encoded Mcp-Name that decodes to the name passes')
  assert.equal(base64Name.body.error?.code, -32602, 'and the unknown tool is then invalid params')
  const noMethodHeader = await rawPost(gw.url, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: ENVELOPE } }, { 'mcp-protocol-version': MODERN })
  assert.equal(noMethodHeader.status, 400)
  assert.equal((await noMethodHeader.json() as Rpc).error?.code, -32020)

  const noCapabilities = await modernPost(gw.url, 'tools/list', { _meta: { 'io.modelcontextprotocol/clientCapabilities': undefined } })
  assert.equal(noCapabilities.status, 400)
  assert.equal(noCapabilities.body.error?.code, -32602)
  const noEnvelope = await rawPost(gw.url, { jsonrpc: '2.0', id: 3, method: 'tools/list', params: {} }, { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' })
  assert.equal(noEnvelope.status, 400)
  assert.equal((await noEnvelope.json() as Rpc).error?.code, -32602)

  // No upstream serves it, so the gateway itself answers (an upstream's own error passes untouched).
  const missing = await modernPost(gw.url, 'resources/read', { uri: 'nowhere://nothing/here' })
  assert.equal(missing.status, 200)
  assert.equal(missing.body.error?.code, -32602, 'a missing resource is invalid params in 2026-07-28 (-32002 before)')
  assert.deepEqual(missing.body.error?.data, { uri: 'nowhere://nothing/here' })

  for (const method of ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe']) {
    const removed = await modernPost(gw.url, method)
    assert.equal(removed.status, 404, method)
    assert.equal(removed.body.error?.code, -32601, method)
  }
  const refused = metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_http_rejections_total', { reason: 'header_mismatch' })
  assert.ok((refused ?? 0) >= 4, `header mismatches counted: ${String(refused)}`)
})

test('a 2026-07-28 client that closes its request cancels the upstream call (the revision\'s way of cancelling over HTTP)', { timeout: 60_000 }, async (t) => {
  const upstream = await startControllableHttpServer({ name: 'web' })
  t.after(() => upstream.close())
  const gw = await startGateway(t, `http: { modernClients: true }\nupstreams:\n  - { name: web, transport: streamable-http, url: ${JSON.stringify(upstream.url)} }\n`)
  await waitReady(gw)
  const controller = new AbortController()
  const stalled = fetch(gw.url, {
    method: 'POST',
    signal: controller.signal,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'web__stall' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'web__stall', arguments: {}, _meta: ENVELOPE } })
  })
  await waitFor(() => upstream.state.stats.calls > 0 || undefined, 'the call to reach the upstream')
  controller.abort()
  await assert.rejects(stalled)
  await waitFor(() => upstream.state.stats.cancelled > 0 || undefined, 'the upstream to be told the call was cancelled')
  // The gateway keeps serving modern requests.
  const listed = await modernPost(gw.url, 'tools/list')
  assert.equal(listed.status, 200)
})
