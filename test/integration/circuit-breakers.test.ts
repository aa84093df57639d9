import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startControllableHttpServer, startControllableServer } from '../fixtures/controllable-server.ts'
import { startFaultProxy } from '../helpers/fault-proxy.ts'
import { fixtureCommand } from '../helpers/spawn-fixture.ts'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean, _meta?: Record<string, unknown> }

// /readyz shows the upstreams' circuits only to an operator's token (the admin token here).
const ADMIN_TOKEN = 'admin-token-0123456789abcdef'
process.env.CIRCUIT_TEST_ADMIN_TOKEN = ADMIN_TOKEN

function config (upstreams: unknown[]): string {
  // eslint-disable-next-line no-template-curly-in-string -- the config's own ${VAR} syntax
  return JSON.stringify({ upstreams, catalog: { listChangedDebounceMs: 20 }, admin: { listen: { port: 0 }, token: '${CIRCUIT_TEST_ADMIN_TOKEN}' } })
}

function errorOf (result: ToolResult): Record<string, unknown> {
  return result._meta?.['switchboard/error'] as Record<string, unknown>
}

async function circuitOf (baseUrl: string, upstream: string): Promise<unknown> {
  const body = await (await fetch(`${baseUrl}/readyz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json() as { upstreams: Array<{ name: string, circuit: unknown }> }
  return body.upstreams.find(u => u.name === upstream)?.circuit
}

test('a stopped HTTP upstream opens its circuit after failureThreshold failures, calls then fail fast, and the circuit closes as soon as the upstream reconnects', async (t) => {
  // No standalone GET stream: the listing connection does not notice the stop (its first health
  // check is 30 s away), so the tool stays listed and every call below reaches the breaker instead
  // of racing the catalog (a listing connection that notices takes the tools out: "Unknown tool").
  const http = await startControllableHttpServer({ name: 'web', standaloneStream: false })
  // Session isolation: the calls go over the session's own connection while the listing connection
  // keeps the catalog, so every call reaches the breaker (see docs/faults.md, "Upstream lifecycle").
  const web = { name: 'web', transport: 'streamable-http', url: http.url, isolation: 'session', connectTimeoutMs: 1000 }
  t.after(() => http.close())
  // A cooldown far longer than the test: only the reconnect can close the circuit.
  const gw = await startGateway(t, config([{ ...web, circuitBreaker: { failureThreshold: 3, cooldownMs: 60_000 } }]))
  await waitReady(gw)
  // On a busy machine the first attempt can miss its 1 s connectTimeoutMs; the next one lists the tool.
  await waitFor(() => gw.gateway.catalogs.tools.resolve('web__whoami') !== undefined, 'the tool to be listed', 20_000)
  const client = await connectClient(t, gw.url)
  const first = await client.callTool({ name: 'web__whoami', arguments: {} }) as ToolResult
  assert.equal(first.content[0]?.text, 'web')
  assert.equal(await circuitOf(gw.baseUrl, 'web'), 'closed')
  await http.close()

  // The connection is lost (one failure), then each call waits for one attempt to reconnect, which
  // fails (one failure each): the third opens the circuit.
  for (let i = 0; i < 3; i++) {
    const failed = await client.callTool({ name: 'web__whoami', arguments: {} }) as ToolResult
    assert.equal(failed.isError, true)
    assert.match(String(errorOf(failed).code), /^SB_ERR_UPSTREAM_(CLOSED|UNAVAILABLE)$/)
    assert.equal(errorOf(failed).circuit, undefined, `call ${i + 1} reached the upstream`)
  }
  const fast = await client.callTool({ name: 'web__whoami', arguments: {} }) as ToolResult
  assert.equal(fast.isError, true)
  assert.equal(errorOf(fast).code, 'SB_ERR_UPSTREAM_UNAVAILABLE')
  assert.equal(errorOf(fast).circuit, 'open')
  assert.match(fast.content[0]?.text ?? '', /failed repeatedly.*circuit open.*did not run.*try the upstream again in/)
  assert.equal(typeof fast._meta?.['switchboard/retryAfterMs'], 'number')
  assert.equal(await circuitOf(gw.baseUrl, 'web'), 'open')
  let metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_circuit_breaker_state', { upstream: 'web', state: 'open' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_circuit_breaker_state', { upstream: 'web', state: 'closed' }), 0)
  assert.equal(metricValue(metrics, 'switchboard_circuit_breaker_rejections_total', { upstream: 'web' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_circuit_breaker_transitions_total', { upstream: 'web', to: 'open' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_tool_calls_total', { upstream: 'web', tool: 'web__whoami', outcome: 'circuit_open' }), 1)
  const opened = gw.logs.find(l => l.msg.startsWith('circuit opened'))
  assert.equal(opened?.level, 40)
  assert.deepEqual([opened?.upstream, opened?.failures, opened?.cooldownMs], ['web', 3, 60_000])

  const again = await startControllableServer('http', { name: 'web-again', port: http.port })
  t.after(() => again.close())
  const own = [...gw.gateway.pool.sessionConnections([...gw.gateway.sessions.all()][0]?.id ?? '')][0]
  await waitFor(() => own?.state === 'ready', 'the session connection to reconnect', 20_000)
  assert.equal(gw.gateway.pool.breaker('web')?.state, 'closed', 'closed by the reconnect, 60 s before any probe')
  const back = await client.callTool({ name: 'web__whoami', arguments: {} }) as ToolResult
  assert.equal(back.content[0]?.text, 'web-again')
  metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_circuit_breaker_state', { upstream: 'web', state: 'closed' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_circuit_breaker_transitions_total', { upstream: 'web', to: 'closed' }), 1)
  const closed = gw.logs.find(l => l.msg.startsWith('circuit closed'))
  assert.equal(closed?.level, 30)
  assert.equal(closed?.msg, 'circuit closed: the upstream reconnected and initialized')
})

test('an upstream that stops answering opens its circuit on timeouts; prompts/get then fails fast with a JSON-RPC error, and a failed probe re-opens it', async (t) => {
  const http = await startControllableHttpServer({ name: 'hung' })
  t.after(() => http.close())
  const hung = { name: 'hung', transport: 'streamable-http', url: http.url, timeoutMs: 100 }
  const gw = await startGateway(t, config([{ ...hung, circuitBreaker: { failureThreshold: 2, cooldownMs: 2000 } }]))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  for (let i = 0; i < 2; i++) {
    const timedOut = await client.callTool({ name: 'hung__stall', arguments: {} }) as ToolResult
    assert.equal(errorOf(timedOut).code, 'SB_ERR_UPSTREAM_TIMEOUT')
  }
  await assert.rejects(client.getPrompt({ name: 'hung__plain' }), (err: Error & { code?: number, data?: Record<string, unknown> }) => {
    assert.equal(err.code, -32603)
    assert.match(err.message, /upstream "hung" failed repeatedly.*circuit open/)
    assert.deepEqual(Object.keys(err.data?.['switchboard/error'] as object).sort(), ['circuit', 'code', 'retryAfterMs', 'upstream'])
    return true
  })
  const fast = await client.callTool({ name: 'hung__echo', arguments: { text: 'x' } }) as ToolResult
  assert.equal(errorOf(fast).circuit, 'open')
  // By name: a timed-out stall may still reach the upstream late, on a busy machine.
  assert.ok(!http.state.stats.calledTools.includes('echo'), 'nothing reached the upstream while the circuit was open')

  await waitFor(async () => await circuitOf(gw.baseUrl, 'hung') === 'half_open', 'the cooldown to end')
  const probe = await client.callTool({ name: 'hung__stall', arguments: {} }) as ToolResult
  assert.equal(errorOf(probe).code, 'SB_ERR_UPSTREAM_TIMEOUT', 'the probe went through and timed out')
  assert.equal(await circuitOf(gw.baseUrl, 'hung'), 'open')
  assert.ok(gw.logs.some(l => l.msg.startsWith('circuit re-opened')))
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_circuit_breaker_transitions_total', { upstream: 'hung', to: 'open' }), 2)
  assert.equal(metricValue(metrics, 'switchboard_circuit_breaker_transitions_total', { upstream: 'hung', to: 'half_open' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_circuit_breaker_rejections_total', { upstream: 'hung' }), 2)
  assert.equal(metricValue(metrics, 'switchboard_forwarded_requests_total', { upstream: 'hung', method: 'prompts/get', outcome: 'circuit_open' }), 1)
})

test('a read-only tool in flight when its stdio upstream crashes is retried after the restart and succeeds; a tool without the annotation is not', async (t) => {
  const stdio = fixtureCommand(['--name', 'fragile'])
  const fragile = { name: 'fragile', transport: 'stdio', command: stdio.command, args: stdio.args, timeoutMs: 20_000 }
  // Retries keep going while the process restarts; the breaker must not cut them short here.
  const gw = await startGateway(t, config([{ ...fragile, retries: { maxAttempts: 8, backoffMs: 200 }, circuitBreaker: { failureThreshold: 50 } }]))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  await client.listTools()
  const connection = gw.gateway.pool.get('fragile')
  const reading = client.callTool({ name: 'fragile__slow_read', arguments: { ms: 400 } }) as Promise<ToolResult>
  const writing = client.callTool({ name: 'fragile__slow', arguments: { ms: 400 } }) as Promise<ToolResult>
  // Both requests are on the process's stdin before the crash is.
  await waitFor(() => (connection?.activeCalls.size ?? 0) >= 2, 'both calls to reach the upstream')
  const crash = await client.callTool({ name: 'fragile__crash', arguments: {} }) as ToolResult
  assert.equal(crash.isError, true)

  const written = await writing
  assert.equal(written.isError, true, 'not retried: it may have run')
  assert.equal(errorOf(written).code, 'SB_ERR_UPSTREAM_CLOSED')
  const read = await reading
  assert.equal(read.isError, undefined)
  assert.equal(read.content[0]?.text, 'done')

  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_tool_call_retries_total', { tool: 'fragile__slow_read', outcome: 'ok' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_tool_call_retries_total', { tool: 'fragile__slow' }), undefined)
  assert.equal(metricValue(metrics, 'switchboard_tool_calls_total', { tool: 'fragile__slow_read', outcome: 'ok' }), 1, 'counted once, with its final outcome')
  assert.equal(metricValue(metrics, 'switchboard_tool_calls_total', { tool: 'fragile__slow', outcome: 'unavailable' }), 1)
  const audited = gw.logs.filter(l => l.msg === 'tool call' && l.tool === 'fragile__slow_read')
  assert.deepEqual(audited.map(l => l.outcome), ['ok'])
  assert.ok(gw.logs.some(l => l.msg.startsWith('retrying a read-only or idempotent tool') && l.tool === 'slow_read'))
})

test('a read-only tool whose attempts all fail counts once per call in the circuit breaker, whatever its retries', async (t) => {
  const http = await startControllableHttpServer({ name: 'web' })
  t.after(() => http.close())
  // Each echo (read-only) request's stream ends without an answer: its connection stays up, and the
  // call is retried, and fails again.
  const proxy = await startFaultProxy(http.url, (body) => body.includes('"lose-me"') ? { endEmpty: true } : undefined)
  t.after(() => proxy.close())
  const web = { name: 'web', transport: 'streamable-http', url: proxy.url, retries: { maxAttempts: 3, backoffMs: 10 }, circuitBreaker: { failureThreshold: 3, cooldownMs: 60_000 } }
  const gw = await startGateway(t, config([web]))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  for (let i = 0; i < 2; i++) {
    const lost = await client.callTool({ name: 'web__echo', arguments: { text: 'lose-me' } }) as ToolResult
    assert.equal(errorOf(lost).code, 'SB_ERR_UPSTREAM_CLOSED')
    assert.equal(errorOf(lost).circuit, undefined)
  }
  assert.equal(proxy.injected, 6, 'two calls of three attempts each')
  assert.equal(gw.gateway.pool.breaker('web')?.failures, 2, 'one failure per call')
  assert.equal(gw.gateway.pool.breaker('web')?.state, 'closed')
  assert.equal(gw.gateway.pool.get('web')?.state, 'ready')
  const ok = await client.callTool({ name: 'web__echo', arguments: { text: 'fine' } }) as ToolResult
  assert.equal(ok.content[0]?.text, 'fine')
  // The success started the count again: three more failed calls, once each, reach the threshold.
  for (let i = 0; i < 3; i++) await client.callTool({ name: 'web__echo', arguments: { text: 'lose-me' } })
  assert.equal(gw.gateway.pool.breaker('web')?.state, 'open')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_tool_call_retries_total', { tool: 'web__echo', outcome: 'failed' }), 10)
})

test('a read-only tool that times out is never retried', async (t) => {
  const http = await startControllableHttpServer({ name: 'web' })
  t.after(() => http.close())
  const web = { name: 'web', transport: 'streamable-http', url: http.url, tools: { timeoutMs: { slow_read: 150 } } }
  const gw = await startGateway(t, config([{ ...web, retries: { maxAttempts: 5, backoffMs: 10 } }]))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  const before = http.state.stats.calls
  const result = await client.callTool({ name: 'web__slow_read', arguments: { ms: 5000 } }) as ToolResult
  assert.equal(result.isError, true)
  assert.equal(errorOf(result).code, 'SB_ERR_UPSTREAM_TIMEOUT')
  assert.equal(http.state.stats.calls - before, 1, 'the upstream saw the call once')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_tool_call_retries_total', { tool: 'web__slow_read' }), undefined)
  assert.equal(metricValue(metrics, 'switchboard_tool_calls_total', { tool: 'web__slow_read', outcome: 'timeout' }), 1)
})
