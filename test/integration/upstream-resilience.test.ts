import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Socket } from 'node:net'
import { startControllableHttpServer, startControllableServer } from '../fixtures/controllable-server.ts'
import { holdPort } from '../helpers/free-port.ts'
import { fixtureCommand } from '../helpers/spawn-fixture.ts'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean }

function config (upstreams: unknown[], extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ upstreams, catalog: { listChangedDebounceMs: 20 }, ...extra })
}

test('an upstream process that dies mid-call fails the call at once and is restarted, its tools listed throughout', async (t) => {
  const stdio = fixtureCommand(['--name', 'fragile'])
  const http = await startControllableHttpServer({ name: 'steady' })
  t.after(() => http.close())
  const gw = await startGateway(t, config([
    { name: 'fragile', transport: 'stdio', command: stdio.command, args: stdio.args },
    { name: 'steady', transport: 'streamable-http', url: http.url }
  ]))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  const changes: number[] = []
  client.setNotificationHandler('notifications/tools/list_changed', () => { changes.push(Date.now()) })
  let promptChanges = 0
  client.setNotificationHandler('notifications/prompts/list_changed', () => { promptChanges++ })
  await client.listTools()
  const stalled = client.callTool({ name: 'fragile__stall', arguments: {} })
  const crash = await client.callTool({ name: 'fragile__crash', arguments: {} }) as ToolResult
  assert.equal(crash.isError, true)
  assert.match(crash.content[0]?.text ?? '', /upstream "fragile"/)
  const lost = await stalled as ToolResult
  assert.equal(lost.isError, true, 'the call in flight failed instead of hanging')
  const down = await client.callTool({ name: 'steady__echo', arguments: { text: 'still here' } }) as ToolResult
  assert.equal(down.content[0]?.text, 'still here', 'the healthy upstream keeps serving')
  assert.ok((await client.listTools()).tools.some(x => x.name === 'fragile__whoami'), 'listed while it restarts')
  await waitFor(() => gw.gateway.pool.get('fragile')?.state === 'ready', 'the upstream to be restarted', 15_000)
  // A list change the restart caused was scheduled when it turned ready. A prompt change made now
  // comes down the same stream after it (after it in the same flush, too: tools go first).
  await client.callTool({ name: 'steady__add_prompt', arguments: { name: 'marker' } })
  await waitFor(() => promptChanges >= 1, 'the marker\'s prompts/list_changed')
  assert.deepEqual(changes, [], 'a restart with the same tools is no list change')
  const back = await client.callTool({ name: 'fragile__whoami', arguments: {} }) as ToolResult
  assert.equal(back.content[0]?.text, 'fragile')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.ok((metricValue(metrics, 'switchboard_upstream_reconnects_total', { upstream: 'fragile' }) ?? 0) >= 1)
  assert.equal(metricValue(metrics, 'switchboard_upstream_up', { upstream: 'fragile' }), 1)
})

test('an upstream that is down at start never blocks the others and is connected in the background once it appears', async (t) => {
  // Held (every connection dropped) rather than only picked: another test could take a picked port
  // before the late server binds it.
  const { port, release } = await holdPort()
  const http = await startControllableHttpServer({ name: 'steady' })
  t.after(() => http.close())
  const gw = await startGateway(t, config([
    { name: 'late', transport: 'streamable-http', url: `http://127.0.0.1:${port}/mcp`, connectTimeoutMs: 2000 },
    { name: 'steady', transport: 'streamable-http', url: http.url }
  ]))
  await waitReady(gw)
  const ready = await fetch(`${gw.baseUrl}/readyz`)
  assert.equal(ready.status, 200, 'ready once every first attempt has settled, even a failed one')
  const client = await connectClient(t, gw.url)
  assert.deepEqual((await client.listTools()).tools.filter(x => x.name.startsWith('late__')), [])
  const unavailable = await client.callTool({ name: 'steady__echo', arguments: { text: 'ok' } }) as ToolResult
  assert.equal(unavailable.content[0]?.text, 'ok')
  assert.equal(metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_upstream_up', { upstream: 'late' }), 0)

  let changed = false
  client.setNotificationHandler('notifications/tools/list_changed', () => { changed = true })
  await release()
  const late = await startControllableServer('http', { name: 'late', port })
  t.after(() => late.close())
  await waitFor(() => gw.gateway.pool.get('late')?.state === 'ready', 'the late upstream to connect', 20_000)
  await waitFor(() => changed, 'list_changed once its tools appear')
  const result = await client.callTool({ name: 'late__whoami', arguments: {} }) as ToolResult
  assert.equal(result.content[0]?.text, 'late')
})

test('a call to an HTTP upstream that went away fails at once with isError, and the upstream is reconnected when it returns', async (t) => {
  const http = await startControllableHttpServer({ name: 'web' })
  const gw = await startGateway(t, config([{ name: 'web', transport: 'streamable-http', url: http.url }]))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  await client.listTools()
  await http.close()
  // The HTTP upstream's loss shows on the next request; the call must not hang either way.
  const started = Date.now()
  const result = await client.callTool({ name: 'web__echo', arguments: { text: 'x' } }) as ToolResult
  assert.equal(result.isError, true)
  assert.ok(Date.now() - started < 5000)
  await waitFor(() => gw.gateway.pool.get('web')?.state !== 'ready', 'the loss to be noticed')
  const again = await startControllableServer('http', { name: 'web-again', port: http.port })
  t.after(() => again.close())
  await waitFor(() => gw.gateway.pool.get('web')?.state === 'ready', 'the upstream to be reconnected', 20_000)
  const back = await client.callTool({ name: 'web__whoami', arguments: {} }) as ToolResult
  assert.equal(back.content[0]?.text, 'web-again')
})

test('an upstream list change is relayed once per burst and the new tool is callable', async (t) => {
  const http = await startControllableHttpServer({ name: 'web' })
  t.after(() => http.close())
  const gw = await startGateway(t, config([{ name: 'web', transport: 'streamable-http', url: http.url }], { catalog: { listChangedDebounceMs: 1000 } }))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  let notified = 0
  client.setNotificationHandler('notifications/tools/list_changed', () => { notified++ })
  let promptsNotified = 0
  client.setNotificationHandler('notifications/prompts/list_changed', () => { promptsNotified++ })
  await client.listTools()
  // Both changes land well inside one debounce window even on a loaded CI machine.
  await Promise.all([
    client.callTool({ name: 'web__add_tool', arguments: { name: 'fresh_one' } }),
    client.callTool({ name: 'web__add_tool', arguments: { name: 'fresh_two' } })
  ])
  await waitFor(() => notified >= 1, 'notifications/tools/list_changed')
  // A prompt change made now is announced a debounce window later, down the same stream, after
  // anything the burst still had pending.
  await client.callTool({ name: 'web__add_prompt', arguments: { name: 'marker' } })
  await waitFor(() => promptsNotified >= 1, 'the marker\'s prompts/list_changed')
  assert.equal(notified, 1, 'a burst of changes becomes one notification')
  const names = (await client.listTools()).tools.map(x => x.name)
  assert.ok(names.includes('web__fresh_one') && names.includes('web__fresh_two'))
  const result = await client.callTool({ name: 'web__fresh_two', arguments: {} }) as ToolResult
  assert.equal(result.content[0]?.text, 'dynamic fresh_two')
  await client.callTool({ name: 'web__remove_tool', arguments: { name: 'fresh_one' } })
  await waitFor(() => notified >= 2, 'a notification for the removal')
  assert.ok(!(await client.listTools()).tools.some(x => x.name === 'web__fresh_one'))
})

test('an upstream that repeats its cursor is paged with a loop guard and still served', async (t) => {
  const http = await startControllableHttpServer({ name: 'liar', pageSize: 3, badCursorLoop: true })
  t.after(() => http.close())
  const gw = await startGateway(t, config([{ name: 'liar', transport: 'streamable-http', url: http.url }]))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  const { tools } = await client.listTools()
  assert.ok(tools.length > 0)
  assert.ok(gw.logs.some(l => l.msg.includes('repeated a list cursor') && l.method === 'tools/list'))
})

test('an upstream that accepts the connection but never answers initialize is given up on within connectTimeoutMs', async (t) => {
  const sockets = new Set<Socket>()
  const silent = createServer(socket => { sockets.add(socket); socket.on('data', () => {}) })
  await new Promise<void>(resolve => silent.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise(resolve => {
    for (const socket of sockets) socket.destroy()
    silent.close(resolve)
  }))
  const port = (silent.address() as { port: number }).port
  const http = await startControllableHttpServer({ name: 'steady' })
  t.after(() => http.close())
  const gw = await startGateway(t, config([
    { name: 'hang', transport: 'streamable-http', url: `http://127.0.0.1:${port}/mcp`, connectTimeoutMs: 300 },
    { name: 'steady', transport: 'streamable-http', url: http.url }
  ]))
  const started = Date.now()
  await waitReady(gw)
  assert.ok(Date.now() - started < 5000)
  assert.equal(gw.gateway.pool.get('hang')?.state, 'backoff')
  // Each abandoned attempt must let go of its socket, not wait minutes for headers.
  await waitFor(() => sockets.size >= 4, 'several retries', 15_000)
  const open = [...sockets].filter(s => !s.destroyed && !s.closed).length
  assert.ok(open <= 2, `${open} sockets still open after ${sockets.size} attempts`)
  const client = await connectClient(t, gw.url)
  assert.ok((await client.listTools()).tools.some(x => x.name === 'steady__echo'))
})

for (const kind of ['sse', 'websocket'] as const) {
  test(`an upstream over ${kind} is listed and called through the gateway`, async (t) => {
    const server = await startControllableServer(kind, { name: kind })
    t.after(() => server.close())
    const gw = await startGateway(t, config([{ name: kind, transport: kind, url: server.url }]))
    await waitReady(gw)
    const client = await connectClient(t, gw.url)
    assert.ok((await client.listTools()).tools.some(x => x.name === `${kind}__echo`))
    const result = await client.callTool({ name: `${kind}__whoami`, arguments: {} }) as ToolResult
    assert.equal(result.content[0]?.text, kind)
    const progress: number[] = []
    await client.callTool({ name: `${kind}__slow`, arguments: { ms: 30, steps: 3 } }, { onprogress: p => { progress.push(p.progress) } })
    assert.equal(progress.length, 3)
  })
}

test('the published reference server (server-everything) works through the gateway', async (t) => {
  const gw = await startGateway(t, config([{ name: 'everything', transport: 'stdio', command: process.execPath, args: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'] }]))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  const { tools } = await client.listTools()
  assert.ok(tools.some(x => x.name === 'everything__echo'))
  const result = await client.callTool({ name: 'everything__echo', arguments: { message: 'hello' } }) as ToolResult
  assert.equal(result.content[0]?.text, 'Echo: hello')
  const sum = await client.callTool({ name: 'everything__get-sum', arguments: { a: 2, b: 40 } }) as ToolResult
  assert.match(sum.content[0]?.text ?? '', /42/)
})
