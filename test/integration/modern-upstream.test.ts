import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { startModernHttpServer, type ModernServerHandle } from '../fixtures/modern-http-server.ts'
import { MODERN } from '../helpers/modern-era.ts'
import { connectClient, metricValue, rawPost, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

// Upstreams of the new era: an MCP server that speaks only 2026-07-28 (no initialize, no session,
// input_required instead of server requests, subscriptions/listen instead of the GET stream),
// behind the gateway, for clients of either era.

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean }

async function modernUpstream (t: TestContext): Promise<ModernServerHandle> {
  const upstream = await startModernHttpServer()
  t.after(() => upstream.close())
  return upstream
}

async function gatewayFor (t: TestContext, url: string, upstream: Record<string, unknown> = {}): Promise<RunningGateway> {
  const gw = await startGateway(t, JSON.stringify({
    http: { modernClients: true },
    catalog: { listChangedDebounceMs: 20 },
    upstreams: [{ name: 'next', transport: 'streamable-http', url, ...upstream }]
  }))
  await waitReady(gw)
  return gw
}

const textOf = (result: unknown): string | undefined => (result as ToolResult).content[0]?.text

test('protocol auto: a 2026-07-28-only upstream is found by server/discover and serves a 2025-11-25 client; its calls carry the 2026-07-28 envelope', async (t) => {
  const upstream = await modernUpstream(t)
  const gw = await gatewayFor(t, upstream.url)
  assert.equal(gw.gateway.pool.status()[0]?.protocolVersion, MODERN)
  assert.equal(upstream.stats.methods.initialize, undefined, 'never initialized')
  const client = await connectClient(t, gw.url, { elicitation: {} })
  assert.deepEqual((await client.listTools()).tools.map(tool => tool.name).sort(), ['next__add_tool', 'next__ask', 'next__echo', 'next__set_note', 'next__where'])
  // The upstream checks Mcp-Param-Region against the argument: the gateway sends it (base64 when it must).
  assert.equal(textOf(await client.callTool({ name: 'next__where', arguments: { region: 'eu-west' } })), 'region eu-west')
  assert.equal(textOf(await client.callTool({ name: 'next__where', arguments: { region: 'Zürich' } })), 'region Zürich')
  assert.equal(textOf(await client.callTool({ name: 'next__echo', arguments: { text: 'across the eras' } })), 'across the eras')
  const meta = upstream.stats.lastCallMeta ?? {}
  assert.equal(meta['io.modelcontextprotocol/protocolVersion'], MODERN)
  assert.deepEqual(meta['io.modelcontextprotocol/clientCapabilities'], { elicitation: {} }, 'the client\'s own capabilities, not the gateway\'s')
  // The era has no logging/setLevel: the client's level goes with each of its calls.
  await client.setLoggingLevel('debug')
  await client.callTool({ name: 'next__echo', arguments: { text: 'again' } })
  assert.equal(upstream.stats.methods['logging/setLevel'], undefined)
  assert.equal(upstream.stats.lastCallMeta?.['io.modelcontextprotocol/logLevel'], 'debug')
})

test('a 2025-11-25 client answers a 2026-07-28 upstream\'s input_required as ordinary elicitation and sampling requests, and gets the final result', async (t) => {
  const upstream = await modernUpstream(t)
  const gw = await gatewayFor(t, upstream.url)
  const client = await connectClient(t, gw.url, { elicitation: { form: {} }, sampling: {} })
  const asked: string[] = []
  client.setRequestHandler('elicitation/create', () => { asked.push('elicitation'); return { action: 'accept', content: { name: 'Ada' } } })
  client.setRequestHandler('sampling/createMessage', () => { asked.push('sampling'); return { role: 'assistant', model: 'm', content: { type: 'text', text: 'hello' } } })
  assert.equal(textOf(await client.callTool({ name: 'next__ask', arguments: {} })), 'Ada said hello')
  assert.deepEqual(asked.sort(), ['elicitation', 'sampling'])
  assert.equal(upstream.stats.methods['tools/call'], 2, 'the call, then its retry with the answers')
})

test('a 2026-07-28 client\'s Mcp-Param-* headers are checked against the arguments its tool mirrors: a mismatch is 400 -32020', async (t) => {
  const upstream = await modernUpstream(t)
  const gw = await gatewayFor(t, upstream.url)
  const post = async (region: string, header?: string): Promise<Response> => await rawPost(gw.url, {
    jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'next__where', arguments: { region }, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} } }
  }, { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'next__where', ...(header === undefined ? {} : { 'mcp-param-region': header }) })
  const agreed = await post('eu', 'eu')
  assert.equal(agreed.status, 200)
  assert.match(JSON.stringify(await agreed.json()), /region eu/)
  for (const [region, header] of [['eu', undefined], ['eu', 'us'], ['Hello', '=?base64?SGVsbG8?=']] as const) {
    const refused = await post(region, header)
    assert.equal(refused.status, 400)
    assert.equal((await refused.json() as { error?: { code: number } }).error?.code, -32020)
  }
})

test('a 2026-07-28 client gets the upstream\'s own input_required and answers it through the gateway', async (t) => {
  const upstream = await modernUpstream(t)
  const gw = await gatewayFor(t, upstream.url)
  const client = new Client({ name: 'modern', version: '1.0.0' }, { capabilities: { elicitation: { form: {} }, sampling: {} }, versionNegotiation: { mode: { pin: MODERN } } })
  client.setRequestHandler('elicitation/create', () => ({ action: 'accept', content: { name: 'Grace' } }))
  client.setRequestHandler('sampling/createMessage', () => ({ role: 'assistant', model: 'm', content: { type: 'text', text: 'hi' } }))
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)))
  t.after(async () => { await client.close().catch(() => {}) })
  assert.equal(textOf(await client.callTool({ name: 'next__ask', arguments: {} })), 'Grace said hi')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_input_required_total', { outcome: 'asked' }) ?? 0, 0, 'passed through, not bridged')
})

test('a 2026-07-28 upstream\'s list change, heard on the gateway\'s subscriptions/listen, reaches a 2025-11-25 client', async (t) => {
  const upstream = await modernUpstream(t)
  const gw = await gatewayFor(t, upstream.url)
  const client = await connectClient(t, gw.url)
  let changes = 0
  client.setNotificationHandler('notifications/tools/list_changed', () => { changes++ })
  await waitFor(() => (upstream.stats.methods['subscriptions/listen'] ?? 0) >= 1, 'the gateway to listen upstream')
  await client.callTool({ name: 'next__add_tool', arguments: { name: 'fresh' } })
  await waitFor(() => changes >= 1, 'tools/list_changed')
  assert.ok((await client.listTools()).tools.some(tool => tool.name === 'next__fresh'))
})

test('a 2025-11-25 client\'s resource subscription to a 2026-07-28 upstream is heard on the gateway\'s listen stream', async (t) => {
  const upstream = await modernUpstream(t)
  const gw = await gatewayFor(t, upstream.url)
  const client = await connectClient(t, gw.url)
  const updated: string[] = []
  client.setNotificationHandler('notifications/resources/updated', (n) => { updated.push(n.params.uri) })
  await client.subscribeResource({ uri: 'note://current' })
  assert.equal(upstream.stats.methods['resources/subscribe'], undefined, 'the era has no resources/subscribe')
  await waitFor(() => (upstream.stats.methods['subscriptions/listen'] ?? 0) >= 2, 'the listen to be opened again with the URI')
  // The upstream takes the new listen a moment after it arrives: change the note until it is heard.
  await waitFor(async () => {
    if (updated.length > 0) return true
    await client.callTool({ name: 'next__set_note', arguments: { text: 'second' } })
    await new Promise(resolve => setTimeout(resolve, 100))
    return updated.length > 0
  }, 'notifications/resources/updated')
  assert.ok(updated.every(uri => uri === 'note://current'), JSON.stringify(updated))
  assert.match(JSON.stringify(await client.readResource({ uri: 'note://current' })), /second/)
})

test('protocol auto keeps 2025-11-25 upstreams working; protocol 2026-07-28 on one says why it cannot connect', async (t) => {
  const legacy = await startControllableHttpServer({ name: 'old' })
  t.after(() => legacy.close())
  const gw = await gatewayFor(t, legacy.url)
  assert.equal(gw.gateway.pool.status()[0]?.protocolVersion, '2025-11-25')
  const client = await connectClient(t, gw.url)
  assert.equal(textOf(await client.callTool({ name: 'next__echo', arguments: { text: 'old' } })), 'old')

  const pinned = await gatewayFor(t, legacy.url, { protocol: '2026-07-28', connectTimeoutMs: 2000 })
  const status = pinned.gateway.pool.status()[0]
  assert.notEqual(status?.state, 'ready')
  assert.match(status?.lastError ?? '', /does not speak 2026-07-28|does not offer 2026-07-28/)
})
