import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { fixtureCommand } from '../helpers/spawn-fixture.ts'
import { connectClient, metricValue, rawInitialize, rawPost, scrapeMetrics, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'

interface ToolResult { content: Array<Record<string, unknown>>, isError?: boolean, structuredContent?: unknown, _meta?: Record<string, unknown> }

function config (upstreams: unknown[], extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ upstreams, ...extra })
}

function textOf (result: ToolResult): string {
  return result.content.map(c => typeof c.text === 'string' ? c.text : '').join('')
}

async function directClient (t: test.TestContext, url: string): Promise<Client> {
  const client = new Client({ name: 'direct', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  t.after(async () => { await client.close() })
  return client
}

test('merges stdio and HTTP upstreams into one sorted, prefixed catalog and routes calls to each', async (t) => {
  const http = await startControllableHttpServer({ name: 'web' })
  t.after(() => http.close())
  const stdio = fixtureCommand(['--name', 'local'])
  const gw = await startGateway(t, config([
    { name: 'local', transport: 'stdio', command: stdio.command, args: stdio.args },
    { name: 'web', transport: 'streamable-http', url: http.url }
  ]))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  const { tools } = await client.listTools()
  const names = tools.map(tool => tool.name)
  assert.deepEqual(names, [...names].sort(), 'sorted by exposed name')
  assert.ok(names.includes('local__echo') && names.includes('web__echo'))
  for (const name of names) assert.match(name, /^[A-Za-z][A-Za-z0-9_-]{0,63}$/)
  const local = await client.callTool({ name: 'local__whoami', arguments: {} }) as ToolResult
  const web = await client.callTool({ name: 'web__whoami', arguments: {} }) as ToolResult
  assert.equal(textOf(local), 'local')
  assert.equal(textOf(web), 'web')
})

test('tool definitions and results pass through untouched, every content type included', async (t) => {
  const http = await startControllableHttpServer({ name: 'web' })
  t.after(() => http.close())
  const gw = await startGateway(t, config([{ name: 'web', transport: 'streamable-http', url: http.url }]))
  await waitReady(gw)
  const viaGateway = await connectClient(t, gw.url)
  const direct = await directClient(t, http.url)
  const directTools = (await direct.listTools()).tools
  const gatewayTools = (await viaGateway.listTools()).tools
  for (const tool of directTools) {
    const exposed = gatewayTools.find(g => g.name === `web__${tool.name}`)
    assert.deepEqual({ ...exposed, name: tool.name }, tool, `definition of ${tool.name}`)
  }
  for (const name of ['rich', 'echo', 'fail']) {
    const args = name === 'echo' ? { text: 'héllo ✓' } : {}
    const expected = await direct.callTool({ name, arguments: args })
    const actual = await viaGateway.callTool({ name: `web__${name}`, arguments: args })
    assert.deepEqual(actual, expected, `result of ${name}`)
  }
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_tool_calls_total', { upstream: 'web', tool: 'web__fail', outcome: 'tool_error' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_tool_calls_total', { upstream: 'web', tool: 'web__rich', outcome: 'ok' }), 1)
})

test('unknown and excluded tools are JSON-RPC -32602; include, exclude and rename apply', async (t) => {
  const http = await startControllableHttpServer({ name: 'web' })
  t.after(() => http.close())
  const gw = await startGateway(t, config([{
    name: 'web',
    transport: 'streamable-http',
    url: http.url,
    prefix: 'w',
    tools: { include: ['ec*', 'add', 'crash'], exclude: ['crash'], rename: { add: 'sum' } }
  }]))
  await waitReady(gw)
  const { sessionId } = await rawInitialize(gw.url)
  const list = await (await rawPost(gw.url, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'mcp-session-id': sessionId })).json() as { result: { tools: Array<{ name: string }> } }
  assert.deepEqual(list.result.tools.map(x => x.name), ['w__echo', 'w__sum'])
  for (const name of ['w__crash', 'w__nothing', 'web__echo', 'echo']) {
    const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name, arguments: {} } }, { 'mcp-session-id': sessionId })
    const body = await res.json() as { error?: { code: number } }
    assert.equal(body.error?.code, -32602, name)
  }
  const sum = await (await rawPost(gw.url, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'w__sum', arguments: { a: 2, b: 3 } } }, { 'mcp-session-id': sessionId })).json() as { result: ToolResult }
  assert.equal(textOf(sum.result), '5')
})

test('the catalog is served in pages with opaque cursors; the SDK client walks them all', async (t) => {
  const http = await startControllableHttpServer({ name: 'web', extraTools: 30, pageSize: 7 })
  t.after(() => http.close())
  const gw = await startGateway(t, config([{ name: 'web', transport: 'streamable-http', url: http.url }], { catalog: { pageSize: 10 } }))
  await waitReady(gw)
  const { sessionId } = await rawInitialize(gw.url)
  const seen: string[] = []
  let cursor: string | undefined
  let pages = 0
  do {
    const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 10 + pages, method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, { 'mcp-session-id': sessionId })
    const body = await res.json() as { result: { tools: Array<{ name: string }>, nextCursor?: string } }
    assert.ok(body.result.tools.length <= 10)
    seen.push(...body.result.tools.map(x => x.name))
    cursor = body.result.nextCursor
    pages++
  } while (cursor !== undefined && pages < 20)
  assert.equal(new Set(seen).size, seen.length, 'no tool repeats')
  assert.ok(seen.includes('web__tool_0030'), 'the upstream\'s own pages were followed')
  const client = await connectClient(t, gw.url)
  assert.deepEqual((await client.listTools()).tools.map(x => x.name), seen)
})

test('a timed-out call is cancelled upstream and answered with isError naming the upstream and the time', async (t) => {
  const http = await startControllableHttpServer({ name: 'web' })
  t.after(() => http.close())
  const gw = await startGateway(t, config([{ name: 'web', transport: 'streamable-http', url: http.url, tools: { timeoutMs: { stall: 300 } } }]))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  const started = Date.now()
  const result = await client.callTool({ name: 'web__stall', arguments: {} }) as ToolResult
  assert.equal(result.isError, true)
  assert.match(textOf(result), /upstream "web" did not answer .*within 300 ms/)
  assert.ok(Date.now() - started < 5000)
  await waitFor(() => http.state.stats.cancelled === 1, 'the upstream to see notifications/cancelled')
  assert.equal(metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_tool_calls_total', { tool: 'web__stall', outcome: 'timeout' }), 1)
})

test('a downstream cancellation cancels exactly the upstream request it maps to', async (t) => {
  const http = await startControllableHttpServer({ name: 'web' })
  t.after(() => http.close())
  const gw = await startGateway(t, config([{ name: 'web', transport: 'streamable-http', url: http.url }]))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  const controller = new AbortController()
  const stalled = client.callTool({ name: 'web__stall', arguments: {} }, { signal: controller.signal })
  const other = client.callTool({ name: 'web__slow', arguments: { ms: 300 } })
  await waitFor(() => http.state.stats.calls >= 2, 'both calls to reach the upstream')
  controller.abort('user pressed stop')
  await assert.rejects(stalled)
  await waitFor(() => http.state.stats.cancelled === 1, 'the upstream to see the cancellation')
  assert.equal(textOf(await other as ToolResult), 'done', 'the other call was not cancelled')
  assert.equal(http.state.stats.cancelled, 1)
})

test('progress notifications are relayed with the client\'s own token, before the result', async (t) => {
  const http = await startControllableHttpServer({ name: 'web' })
  t.after(() => http.close())
  const gw = await startGateway(t, config([{ name: 'web', transport: 'streamable-http', url: http.url }]))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  const progress: number[] = []
  const result = await client.callTool({ name: 'web__slow', arguments: { ms: 60, steps: 4 } }, { onprogress: (p) => { progress.push(p.progress) } }) as ToolResult
  assert.equal(textOf(result), 'done')
  assert.equal(progress.length, 4)
  assert.deepEqual(progress, [...progress].sort((a, b) => a - b))

  const { sessionId } = await rawInitialize(gw.url)
  const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 'abc', method: 'tools/call', params: { name: 'web__slow', arguments: { ms: 30, steps: 3 }, _meta: { progressToken: 'my-token' } } }, { 'mcp-session-id': sessionId })
  assert.equal(res.headers.get('content-type'), 'text/event-stream')
  const events = (await res.text()).split('\n\n').filter(e => /data: ./.test(e)).map(e => JSON.parse(e.slice(e.indexOf('data:') + 5)) as Record<string, unknown>)
  assert.equal(events.length, 4)
  for (const e of events.slice(0, 3)) assert.equal((e.params as { progressToken: unknown }).progressToken, 'my-token')
  assert.equal(events[3]?.id, 'abc')
})

test('calls without a progress token are answered as plain JSON', async (t) => {
  const http = await startControllableHttpServer({ name: 'web' })
  t.after(() => http.close())
  const gw = await startGateway(t, config([{ name: 'web', transport: 'streamable-http', url: http.url }]))
  await waitReady(gw)
  const { sessionId } = await rawInitialize(gw.url)
  const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'web__echo', arguments: { text: 'x' } } }, { 'mcp-session-id': sessionId })
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
  assert.equal(((await res.json()) as { result: ToolResult }).result.content[0]?.text, 'x')
})

test('upstream errors pass through as JSON-RPC errors with their own code', async (t) => {
  const http = await startControllableHttpServer({ name: 'web' })
  t.after(() => http.close())
  const gw = await startGateway(t, config([{ name: 'web', transport: 'streamable-http', url: http.url }]))
  await waitReady(gw)
  const { sessionId } = await rawInitialize(gw.url)
  const direct = await directClient(t, http.url)
  const directError = await direct.callTool({ name: 'add', arguments: { a: 'x' } }).then(r => ({ result: r }), (e: { code?: number }) => ({ code: e.code }))
  const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'web__add', arguments: { a: 'x' } } }, { 'mcp-session-id': sessionId })
  const body = await res.json() as { result?: ToolResult, error?: { code: number } }
  if ('code' in directError) assert.equal(body.error?.code, directError.code)
  else assert.deepEqual(body.result, directError.result)
})
