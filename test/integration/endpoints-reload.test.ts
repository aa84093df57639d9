import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { writeFile } from 'node:fs/promises'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { tempConfig } from '../helpers/cli.ts'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { rawPost, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'
import type { RunningGateway } from '../helpers/start-gateway.ts'

// A reload applies `endpoints` live: a removed endpoint's sessions end (and its path is 404), a
// changed one's sessions see the new view and hear one list_changed, the others hear nothing.

interface Caller { client: Client, sessionId: string, changes: { tools: number, prompts: number } }

async function caller (t: TestContext, gw: RunningGateway, endpoint?: string): Promise<Caller> {
  const client = new Client({ name: endpoint ?? 'root', version: '1' })
  const changes = { tools: 0, prompts: 0 }
  client.setNotificationHandler('notifications/tools/list_changed', () => { changes.tools++ })
  client.setNotificationHandler('notifications/prompts/list_changed', () => { changes.prompts++ })
  const transport = new StreamableHTTPClientTransport(new URL(endpoint === undefined ? gw.url : `${gw.url}/${endpoint}`))
  await client.connect(transport)
  t.after(async () => { await client.close().catch(() => {}) })
  const sessionId = transport.sessionId ?? ''
  await waitFor(() => gw.gateway.sessions.peek(sessionId)?.hasStream, `the GET stream on ${endpoint ?? '/mcp'}`)
  return { client, sessionId, changes }
}

async function toolNames (client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map(tool => tool.name)
}

test('a reload adds, changes and removes endpoints under live sessions; an invalid one changes nothing', async (t) => {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const api = await startControllableHttpServer({ name: 'api' })
  t.after(() => api.close())
  const base = {
    upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url }, { name: 'api', transport: 'streamable-http', url: api.url }],
    catalog: { listChangedDebounceMs: 20 }
  }
  const v1 = { ...base, endpoints: [{ name: 'keep', upstreams: ['web'] }, { name: 'narrowed' }, { name: 'gone', upstreams: ['api'] }] }
  const file = await tempConfig(t, JSON.stringify(v1))
  const gw = await startGateway(t, JSON.stringify(v1), process.env, file)
  await waitReady(gw)
  const keep = await caller(t, gw, 'keep')
  const narrowed = await caller(t, gw, 'narrowed')
  const gone = await caller(t, gw, 'gone')
  for (const c of [keep, narrowed, gone]) await toolNames(c.client)
  assert.ok((await toolNames(narrowed.client)).some(n => n.startsWith('api__')))

  await writeFile(file, JSON.stringify({ ...base, endpoints: [{ name: 'keep', upstreams: ['web'] }, { name: 'narrowed', upstreams: ['web'] }, { name: 'fresh', discovery: 'search' }] }))
  const result = await gw.reload('test')
  assert.equal(result.outcome, 'ok')
  assert.ok(result.outcome === 'ok' && result.diff.applied.includes('endpoints'))

  await waitFor(() => narrowed.changes.tools >= 1, 'the changed endpoint\'s list_changed')
  assert.ok((await toolNames(narrowed.client)).every(n => n.startsWith('web__')))
  assert.equal(gw.gateway.sessions.peek(gone.sessionId), undefined, 'the removed endpoint\'s session is closed')
  const stale = await rawPost(`${gw.url}/gone`, { jsonrpc: '2.0', id: 9, method: 'tools/list' }, { 'mcp-session-id': gone.sessionId, 'mcp-protocol-version': '2025-11-25' })
  assert.equal(stale.status, 404)
  assert.deepEqual(await toolNames((await caller(t, gw, 'fresh')).client), ['search_tools', 'call_tool'])

  // A change every remaining session sees, after the reload's notifications went out: the order on
  // each session's stream shows that keep was not told about tools, and narrowed only once.
  await keep.client.callTool({ name: 'web__add_prompt', arguments: { name: 'sentinel' } })
  await waitFor(() => keep.changes.prompts >= 1 && narrowed.changes.prompts >= 2, 'the sentinel prompts/list_changed')
  assert.deepEqual([keep.changes.tools, narrowed.changes.tools], [0, 1])

  await writeFile(file, JSON.stringify({ ...base, endpoints: [{ name: 'keep', upstreams: ['wbe'] }, { name: 'keep' }, { name: 'new' }] }))
  const refused = await gw.reload('test')
  assert.equal(refused.outcome, 'invalid')
  assert.deepEqual(refused.outcome === 'invalid' && refused.errors.map(e => e.path), ['endpoints[0].upstreams[0]', 'endpoints[1].name'])
  assert.equal(gw.gateway.config.endpoints.map(e => e.name).join(','), 'keep,narrowed,fresh')
  const notApplied = await rawPost(`${gw.url}/new`, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })
  assert.equal(notApplied.status, 404)
  assert.deepEqual(await toolNames(keep.client), (await toolNames(narrowed.client)))
})

test('a reload that changes an endpoint\'s roles ends the sessions of principals without them; one that takes a principal\'s role away refuses its next request', async (t) => {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const key = 'alice-key-0123456789abcdef'
  const env = { ...process.env, ALICE_KEY: key }
  const config = (keyRoles: string[], endpointRoles: string[]): string => JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url }],
    // eslint-disable-next-line no-template-curly-in-string -- the config's own ${VAR} syntax
    auth: { apiKeys: [{ id: 'alice', key: '${ALICE_KEY}', roles: keyRoles }] },
    endpoints: [{ name: 'ops', roles: endpointRoles }]
  })
  const file = await tempConfig(t, config(['ops'], ['ops']))
  const gw = await startGateway(t, config(['ops'], ['ops']), env, file)
  await waitReady(gw)
  const headers = { authorization: `Bearer ${key}` }
  const open = async (): Promise<{ client: Client, sessionId: string }> => {
    const client = new Client({ name: 'alice', version: '1' })
    const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}/ops`), { requestInit: { headers } })
    await client.connect(transport)
    t.after(async () => { await client.close().catch(() => {}) })
    assert.ok((await toolNames(client)).length > 0)
    return { client, sessionId: transport.sessionId ?? '' }
  }
  const list = (sessionId: string): Promise<Response> => rawPost(`${gw.url}/ops`, { jsonrpc: '2.0', id: 5, method: 'tools/list' }, { ...headers, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' })

  const first = await open()
  await writeFile(file, config(['ops'], ['admin']))
  assert.equal((await gw.reload('test')).outcome, 'ok')
  assert.equal(gw.gateway.sessions.peek(first.sessionId), undefined, 'the session is closed')
  assert.equal((await list(first.sessionId)).status, 403)

  await writeFile(file, config(['ops'], ['ops']))
  assert.equal((await gw.reload('test')).outcome, 'ok')
  const second = await open()
  // The key keeps its id but loses the role: the session's principal was fixed at open, each request's is not.
  await writeFile(file, config(['dev'], ['ops']))
  assert.equal((await gw.reload('test')).outcome, 'ok')
  assert.equal((await list(second.sessionId)).status, 403)
})
