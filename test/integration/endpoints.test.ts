/* eslint-disable no-template-curly-in-string -- ${VAR} is the config syntax under test */
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { WebSocket } from 'ws'
import { Client, SSEClientTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { metricValue, rawInitialize, rawPost, scrapeMetrics, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'
import type { RunningGateway } from '../helpers/start-gateway.ts'
import { rpcErrorOf } from '../helpers/rpc-error.ts'

const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdef00' }
const ENV = { ...process.env, ALICE_KEY: KEYS.alice, BOB_KEY: KEYS.bob }
type Who = keyof typeof KEYS

const ENDPOINTS = [
  { name: 'web-only', upstreams: ['web'] },
  { name: 'echoes', tools: { include: ['*__echo', '*__add'], exclude: ['api__add'] } },
  { name: 'readonly', annotations: { readOnlyHint: true } },
  { name: 'ops', upstreams: ['api'], roles: ['ops'] },
  { name: 'finder', discovery: 'search' }
]

/** Two upstreams (web, api), alice (dev) and bob (ops), the endpoints above, pages of 2. */
async function gateway (t: TestContext): Promise<RunningGateway> {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const api = await startControllableHttpServer({ name: 'api' })
  t.after(() => api.close())
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url }, { name: 'api', transport: 'streamable-http', url: api.url }],
    catalog: { pageSize: 2, listChangedDebounceMs: 20 },
    auth: { apiKeys: [{ id: 'alice', key: '${ALICE_KEY}', roles: ['dev'] }, { id: 'bob', key: '${BOB_KEY}', roles: ['ops'] }] },
    endpoints: ENDPOINTS
  }), ENV)
  await waitReady(gw)
  return gw
}

interface Caller { client: Client, changes: { tools: number, prompts: number } }

async function caller (t: TestContext, gw: RunningGateway, who: Who, endpoint?: string): Promise<Caller> {
  const client = new Client({ name: `${who}-${endpoint ?? 'root'}`, version: '1' })
  const changes = { tools: 0, prompts: 0 }
  client.setNotificationHandler('notifications/tools/list_changed', () => { changes.tools++ })
  client.setNotificationHandler('notifications/prompts/list_changed', () => { changes.prompts++ })
  const transport = new StreamableHTTPClientTransport(new URL(endpoint === undefined ? gw.url : `${gw.url}/${endpoint}`), { requestInit: { headers: { authorization: `Bearer ${KEYS[who]}` } } })
  await client.connect(transport)
  t.after(async () => { await client.close().catch(() => {}) })
  await waitFor(() => gw.gateway.sessions.peek(transport.sessionId ?? '')?.hasStream, `${who}'s GET stream on ${endpoint ?? '/mcp'}`)
  return { client, changes }
}

type Listed = Array<{ name: string, annotations?: { readOnlyHint?: boolean } }>

async function allTools (client: Client): Promise<Listed> {
  const tools: Listed = []
  let cursor: string | undefined
  for (let page = 0; page < 50; page++) {
    const result = await client.listTools(cursor === undefined ? {} : { cursor })
    tools.push(...result.tools)
    cursor = result.nextCursor
    if (cursor === undefined) return tools
  }
  throw new Error('more than 50 pages')
}

const names = (tools: Listed): string[] => tools.map(tool => tool.name)

async function callError (client: Client, name: string): Promise<{ code: number, message: string }> {
  return await rpcErrorOf(client.callTool({ name, arguments: {} }))
}

test('each endpoint lists exactly its selection across pages, and /mcp the whole catalog', async (t) => {
  const gw = await gateway(t)
  const full = await allTools((await caller(t, gw, 'alice')).client)
  assert.ok(full.length > 20, 'the two fixtures list many tools')
  const listed = async (who: Who, endpoint: string): Promise<string[]> => names(await allTools((await caller(t, gw, who, endpoint)).client))
  assert.deepEqual(await listed('alice', 'web-only'), names(full).filter(n => n.startsWith('web__')))
  assert.deepEqual(await listed('alice', 'echoes'), ['api__echo', 'web__add', 'web__echo'])
  const readOnly = names(full.filter(tool => tool.annotations?.readOnlyHint === true))
  assert.ok(readOnly.length >= 4)
  assert.deepEqual(await listed('alice', 'readonly'), readOnly)
  assert.deepEqual(await listed('bob', 'ops'), names(full).filter(n => n.startsWith('api__')))
  assert.deepEqual(await listed('alice', 'finder'), ['search_tools', 'call_tool'])
})

test('a call outside the endpoint\'s selection is -32602 exactly like an unknown tool; one inside works', async (t) => {
  const gw = await gateway(t)
  const { client } = await caller(t, gw, 'alice', 'echoes')
  const outside = await callError(client, 'web__whoami')
  const unknown = await callError(client, 'web__no_such_tool')
  assert.equal(outside.code, -32602)
  assert.equal(unknown.code, -32602)
  assert.equal(outside.message.replace('web__whoami', 'X'), unknown.message.replace('web__no_such_tool', 'X'))
  assert.equal((await callError(client, 'api__add')).code, -32602, 'excluded by tools.exclude')
  const echoed = await client.callTool({ name: 'api__echo', arguments: { text: 'hi' } })
  assert.deepEqual(echoed.structuredContent, { text: 'hi' })
  const exposition = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(exposition, 'switchboard_tool_calls_total', { endpoint: 'echoes', tool: 'api__echo', outcome: 'ok' }), 1)
  // Outside the endpoint is unknown there, not a policy denial.
  assert.equal(metricValue(exposition, 'switchboard_tool_calls_total', { endpoint: 'echoes', outcome: 'unknown_tool' }), 3)
  assert.equal(metricValue(exposition, 'switchboard_policy_denials_total'), undefined)
})

test('prompts and resources follow the endpoint\'s upstreams', async (t) => {
  const gw = await gateway(t)
  const { client } = await caller(t, gw, 'alice', 'web-only')
  const prompts = (await client.listPrompts()).prompts.map(p => p.name)
  assert.ok(prompts.length > 0 && prompts.every(p => p.startsWith('web__')), prompts.join(', '))
  const resources = (await client.listResources()).resources.map(r => r.uri)
  assert.ok(resources.length > 0 && resources.every(u => u.startsWith('fixture://web/')), resources.join(', '))
  const templates = (await client.listResourceTemplates()).resourceTemplates.map(r => r.uriTemplate)
  assert.deepEqual(templates, ['fixture://web/items/{id}'])
  assert.equal(((await client.readResource({ uri: 'fixture://web/hello' })).contents[0] as { text: string }).text.length > 0, true)
  // The SDK client folds the wire's -32002 into -32602; the message is the gateway's own.
  await assert.rejects(client.readResource({ uri: 'fixture://api/hello' }), /Resource not found: fixture:\/\/api\/hello/)
  await assert.rejects(client.getPrompt({ name: 'api__plain' }), (err: { code?: number }) => err.code === -32602)
})

test('a role-restricted endpoint refuses other principals with 403 and a JSON-RPC error; an unknown one is 404', async (t) => {
  const gw = await gateway(t)
  const alice = { authorization: `Bearer ${KEYS.alice}` }
  const refused = await rawPost(`${gw.url}/ops`, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }, alice)
  assert.equal(refused.status, 403)
  const body = await refused.json() as { jsonrpc: string, error: { code: number, message: string } }
  assert.equal(body.jsonrpc, '2.0')
  assert.equal(body.error.code, -32000)
  assert.match(body.error.message, /^Forbidden: endpoint "ops" is open only to principals with role ops; alice has roles dev$/)
  await assert.rejects(caller(t, gw, 'alice', 'ops'))
  const legacy = await fetch(`${gw.baseUrl}/sse/ops`, { headers: { ...alice, accept: 'text/event-stream' } })
  assert.equal(legacy.status, 403)
  const socket = new WebSocket(`${gw.url.replace('http:', 'ws:')}/ops`, 'mcp', { headers: alice })
  socket.on('error', () => {})
  const [, upgrade] = await once(socket, 'unexpected-response') as [unknown, { statusCode: number }]
  assert.equal(upgrade.statusCode, 403, 'the WebSocket upgrade is refused too')
  socket.terminate()
  await rawInitialize(`${gw.url}/ops`, '2025-11-25', { authorization: `Bearer ${KEYS.bob}` })

  const unknown = await rawPost(`${gw.url}/opps`, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }, alice)
  assert.equal(unknown.status, 404)
  assert.deepEqual(await unknown.json(), { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Not Found: no endpoint named "opps"' } })
  const exposition = await scrapeMetrics(gw.baseUrl)
  assert.ok((metricValue(exposition, 'switchboard_http_rejections_total', { reason: 'endpoint_role' }) ?? 0) >= 3)
  assert.equal(metricValue(exposition, 'switchboard_http_rejections_total', { reason: 'unknown_endpoint' }), 1)
})

test('a session is served only on the endpoint it was opened on; legacy SSE and WebSocket serve endpoints too', async (t) => {
  const gw = await gateway(t)
  const headers = { authorization: `Bearer ${KEYS.alice}` }
  const { sessionId } = await rawInitialize(`${gw.url}/echoes`, '2025-11-25', headers)
  const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' }
  const elsewhere = await rawPost(`${gw.url}/web-only`, list, { ...headers, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' })
  assert.equal(elsewhere.status, 404)
  assert.equal((await rawPost(gw.url, list, { ...headers, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' })).status, 404)
  const home = await rawPost(`${gw.url}/echoes`, list, { ...headers, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' })
  assert.equal(home.status, 200)

  const legacy = new Client({ name: 'legacy', version: '1' })
  await legacy.connect(new SSEClientTransport(new URL(`${gw.baseUrl}/sse/echoes`), { requestInit: { headers } }))
  t.after(async () => { await legacy.close().catch(() => {}) })
  assert.deepEqual(names(await allTools(legacy)), ['api__echo', 'web__add', 'web__echo'])
  const ws = new WebSocket(`${gw.url.replace('http:', 'ws:')}/echoes`, 'mcp', { headers })
  t.after(() => { ws.terminate() })
  await once(ws, 'open')
  const replies: Array<{ id?: number, result?: { tools?: Listed } }> = []
  ws.on('message', (data) => { replies.push(JSON.parse(String(data)) as { id?: number }) })
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'ws', version: '1' } } }))
  await waitFor(() => replies.find(r => r.id === 1), 'the WebSocket initialize answer')
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }))
  const listedOnSocket = await waitFor(() => replies.find(r => r.id === 2), 'the WebSocket tools/list answer')
  assert.deepEqual(names(listedOnSocket.result?.tools ?? []), ['api__echo', 'web__add'], 'the first page of two')
  const exposition = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(exposition, 'switchboard_sessions_active', { transport: 'sse', endpoint: 'echoes' }), 1)
  assert.equal(metricValue(exposition, 'switchboard_sessions_active', { transport: 'websocket', endpoint: 'echoes' }), 1)
})

test('list_changed reaches only the sessions whose endpoint view changed', async (t) => {
  const gw = await gateway(t)
  const root = await caller(t, gw, 'alice')
  const webOnly = await caller(t, gw, 'alice', 'web-only')
  const echoes = await caller(t, gw, 'alice', 'echoes')
  const finder = await caller(t, gw, 'alice', 'finder')
  const ops = await caller(t, gw, 'bob', 'ops')
  for (const c of [root, webOnly, echoes, finder, ops]) await allTools(c.client)
  await root.client.callTool({ name: 'web__add_tool', arguments: { name: 'fresh' } })
  await waitFor(() => root.changes.tools >= 1 && webOnly.changes.tools >= 1, 'list_changed on /mcp and /mcp/web-only')
  assert.ok(names(await allTools(webOnly.client)).includes('web__fresh'))
  // Every session's notifications are sent in one pass, in order on each session's stream: a
  // prompt change the others can see, sent after that pass, arrives after anything the pass sent them.
  await root.client.callTool({ name: 'api__add_prompt', arguments: { name: 'sentinel' } })
  await waitFor(() => echoes.changes.prompts >= 1 && finder.changes.prompts >= 1 && ops.changes.prompts >= 1, 'the sentinel prompts/list_changed')
  assert.deepEqual([echoes.changes.tools, finder.changes.tools, ops.changes.tools], [0, 0, 0])
  assert.deepEqual([root.changes.tools, webOnly.changes.tools], [1, 1])
})
